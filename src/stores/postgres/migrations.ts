/**
 * Versioned schema of the PostgreSQL store; a migration never changes once released, a change is
 * a new version. Times are epoch milliseconds in BIGINT (as in the SQLite store), JSON in JSONB.
 * Only the durable state lives here (including the DAM connections held for MCP sessions); login
 * states, replay keys and rate-limit counters are in Redis.
 */
export const PG_MIGRATIONS: { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'partners, users, sessions',
    sql: `
      CREATE TABLE partners (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        issuer TEXT NOT NULL UNIQUE,
        audience TEXT NOT NULL,
        jwks_url TEXT,
        jwks JSONB,
        max_token_age INTEGER NOT NULL,
        rate_limit INTEGER NOT NULL,
        allowed_origins JSONB NOT NULL,
        enabled BOOLEAN NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE TABLE users (
        id TEXT PRIMARY KEY,
        partner_id TEXT NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
        sub TEXT NOT NULL,
        email TEXT NOT NULL,
        name TEXT,
        given_name TEXT,
        family_name TEXT,
        created_at BIGINT NOT NULL,
        last_seen_at BIGINT NOT NULL,
        UNIQUE (partner_id, sub)
      );
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        partner_id TEXT NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
        current_jti TEXT NOT NULL,
        previous_jti TEXT,
        rotated_at BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
      CREATE INDEX sessions_user ON sessions (user_id);
      CREATE INDEX sessions_partner ON sessions (partner_id);
      CREATE INDEX sessions_expires ON sessions (expires_at);
      CREATE INDEX sessions_revoked ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;
    `,
  },
  {
    // Numbered apart from the library-index migrations developed alongside (they take 2, 3, ...).
    version: 20,
    name: 'hub secrets shared by every node',
    sql: `
      CREATE TABLE hub_secrets (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at BIGINT NOT NULL
      );
    `,
  },
  {
    version: 21,
    name: 'DAM connections held for MCP sessions',
    sql: `
      CREATE TABLE mcp_connections (
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        provider_id TEXT NOT NULL,
        access_token TEXT,
        refresh_token TEXT,
        pending_state TEXT,
        pending_url TEXT,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (user_id, provider_id)
      );
    `,
  },
  {
    // The write engine's durable state (docs/writes.md), the tables of SQLite migration 5 less the
    // write locks, which live in Redis (src/stores/redis/index.ts). JSON columns are JSONB here.
    version: 22,
    name: 'partner writes, Idempotency-Key records, the write audit, unfinished uploads',
    sql: `
      ALTER TABLE partners ADD COLUMN writes BOOLEAN NOT NULL DEFAULT false;
      CREATE TABLE idempotency_keys (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        status INTEGER,
        headers JSONB,
        body TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (scope, key)
      );
      CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
      CREATE TABLE audit_log (
        at BIGINT NOT NULL,
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
        bytes BIGINT,
        result TEXT NOT NULL
      );
      CREATE INDEX audit_log_at ON audit_log (at, request_id);
      -- damhub audit --partner / ?partnerId= pages one partner's entries without reading the others'.
      CREATE INDEX audit_log_partner_at ON audit_log (partner_id, at, request_id);
      CREATE TABLE uploads (
        id TEXT PRIMARY KEY,
        partner_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        provider_id TEXT NOT NULL,
        length BIGINT,
        "offset" BIGINT NOT NULL,
        metadata JSONB NOT NULL,
        location TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        result JSONB
      );
      CREATE INDEX uploads_expiry ON uploads (expires_at) WHERE result IS NULL;
    `,
  },
];

/** Key of the advisory lock that serialises migrations when several nodes start at once. */
export const MIGRATION_LOCK_KEY = 0x64616d68; // 'damh'
