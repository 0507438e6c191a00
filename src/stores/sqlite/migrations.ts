/** Versioned schema of the embedded store; a migration never changes once released. */
export const MIGRATIONS: { version: number; sql: string }[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE partners (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        issuer TEXT NOT NULL UNIQUE,
        audience TEXT NOT NULL,
        jwks_url TEXT,
        jwks TEXT,
        max_token_age INTEGER NOT NULL,
        rate_limit INTEGER NOT NULL,
        allowed_origins TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE users (
        id TEXT PRIMARY KEY,
        partner_id TEXT NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
        sub TEXT NOT NULL,
        email TEXT NOT NULL,
        name TEXT,
        given_name TEXT,
        family_name TEXT,
        created_at INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL,
        UNIQUE (partner_id, sub)
      );
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        partner_id TEXT NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
        current_jti TEXT NOT NULL,
        previous_jti TEXT,
        rotated_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
      CREATE INDEX sessions_user ON sessions(user_id);
      CREATE TABLE replay_keys (key TEXT PRIMARY KEY, expires_at INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE login_states (
        state TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        partner_id TEXT NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
        provider_id TEXT NOT NULL,
        server_url TEXT,
        status TEXT NOT NULL,
        result TEXT,
        error TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE rate_limits (key TEXT PRIMARY KEY, tat REAL NOT NULL) WITHOUT ROWID;
    `,
  },
  {
    // Issue 17: counting a user's (and the hub's) pending login states at every start must not scan the table.
    version: 2,
    sql: `
      CREATE INDEX login_states_user_pending ON login_states(user_id, status, expires_at);
      CREATE INDEX login_states_pending ON login_states(status, expires_at);
    `,
  },
  {
    // DAM connections held for MCP sessions, formerly a private file per node (<data>/mcp.sqlite,
    // imported once at start: src/stores/legacy-mcp-file.ts). Same columns as that file; removing
    // a user removes the connections held for it.
    version: 3,
    sql: `
      CREATE TABLE mcp_connections (
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        provider_id TEXT NOT NULL,
        access_token TEXT,
        refresh_token TEXT,
        pending_state TEXT,
        pending_url TEXT,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, provider_id)
      ) WITHOUT ROWID;
    `,
  },
  {
    // Issue 29: the language a login's sign-in pages speak (POST /auth/login's uiLocale), kept
    // with the state so it holds through the vendor's redirect and the form's POST. NULL (older
    // states too): the browser's Accept-Language decides.
    version: 4,
    sql: `ALTER TABLE login_states ADD COLUMN ui_locale TEXT;`,
  },
  {
    // Issue 30, the write engine: the partner opt-in, write locks, Idempotency-Key records, the
    // write audit and unfinished tus uploads (docs/writes.md).
    version: 5,
    sql: `
      ALTER TABLE partners ADD COLUMN writes INTEGER NOT NULL DEFAULT 0;
      CREATE TABLE write_locks (
        key TEXT PRIMARY KEY,
        token TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE idempotency_keys (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        status INTEGER,
        headers TEXT,
        body TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (scope, key)
      ) WITHOUT ROWID;
      CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at);
      CREATE TABLE audit_log (
        at INTEGER NOT NULL,
        request_id TEXT NOT NULL,
        partner_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        provider_id TEXT NOT NULL,
        account_id TEXT,
        operation TEXT NOT NULL,
        target_id TEXT,
        target_id_after TEXT,
        name_before TEXT,
        name_after TEXT,
        bytes INTEGER,
        result TEXT NOT NULL
      );
      CREATE INDEX audit_log_at ON audit_log(at, request_id);
      CREATE TABLE uploads (
        id TEXT PRIMARY KEY,
        partner_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        provider_id TEXT NOT NULL,
        length INTEGER,
        "offset" INTEGER NOT NULL,
        metadata TEXT NOT NULL,
        location TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        result TEXT
      );
      CREATE INDEX uploads_expiry ON uploads(expires_at);
    `,
  },
];
