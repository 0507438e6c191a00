/**
 * A real hub process (`damhub serve`) serving the WebDAV connector, with a partner registered
 * through the CLI, and hub users signed in to a WebDAV server the way a browser does it (start
 * the login, open the form, submit it, poll), over real HTTP. The hub's temp directory (TMPDIR) is
 * a private folder the test can watch: the hub's temp files are all in it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './hub.js';
import { makeKey, signPartnerJwt, type TestKey } from './partner.js';
import { runCli, startServer, type ServerProcess } from './process.js';

export interface DavSession {
  sub: string;
  headers: Record<string, string>;
  /** The folder's assets as listed: id, name, thumbnailUrl, downloadUrl. */
  assets: { id: string; name: string; thumbnailUrl: string; downloadUrl: string }[];
}

export interface ConnectorHub {
  server: ServerProcess;
  url: string;
  /** The hub process's TMPDIR. */
  tmp: string;
  key: TestKey;
  issuer: string;
  /** Signs in hub user `sub` to the WebDAV server at `davUrl` and lists its root folder. */
  session(sub: string, davUrl: string): Promise<DavSession>;
  /** Bytes of every file under the hub's TMPDIR now, and the number of its entries. */
  tempUsage(): { bytes: number; entries: number };
  stop(): Promise<void>;
}

/** A small cookie jar: whatever the hub sets on the sign-in pages goes back with the next request. */
class Jar {
  private readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const c of res.headers.getSetCookie?.() ?? []) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      if (eq > 0) this.cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
  }
  header(): Record<string, string> {
    return this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {};
  }
}

export async function startConnectorHub(env: NodeJS.ProcessEnv = {}): Promise<ConnectorHub> {
  const data = tempDir('damhub-conn-');
  const tmp = tempDir('damhub-conn-tmp-');
  const key = await makeKey();
  const issuer = 'https://partner.flood.example/';
  const jwksFile = path.join(tmp, '..', `jwks-${path.basename(data)}.json`);
  fs.writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
  const add = await runCli(['partners', 'add', '--issuer', issuer, '--jwks-file', jwksFile, '--data', data, '--rate-limit', '10000']);
  assert.equal(add.code, 0, add.stderr);
  const server = await startServer(['--data', data], {
    DAMHUB_CONNECTORS: 'webdav', DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1', DAMHUB_USER_RATE_LIMIT: '0', TMPDIR: tmp, ...env,
  });
  const api = `${server.url}/api/v1`;
  const json = async (r: Response) => {
    const text = await r.text();
    if (!r.ok) throw new Error(`${r.url}: ${r.status} ${text}`);
    return JSON.parse(text);
  };
  return {
    server, url: server.url, tmp, key, issuer,
    async session(sub, davUrl) {
      const jwt = await signPartnerJwt(Date.now(), { key, issuer, sub });
      const { access_token } = await json(await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } }));
      const auth = { authorization: `Bearer ${access_token}` };
      const start = await json(await fetch(`${api}/auth/login?provider=webdav&polling=true&serverUrl=${encodeURIComponent(davUrl)}`, { method: 'POST', headers: auth }));
      const jar = new Jar();
      const formRes = await fetch(start.redirect_uri, { headers: jar.header() });
      jar.take(formRes);
      const form = await formRes.text();
      const action = /<form method="post" action="([^"]+)"/.exec(form)?.[1];
      assert.ok(action, `the sign-in form: ${form.slice(0, 300)}`);
      const signin = await fetch(new URL(action.replace(/&amp;/g, '&'), server.url), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...jar.header() },
        body: new URLSearchParams({ state: start.state, serverUrl: davUrl, username: 'mallory', password: 'pw' }),
      });
      assert.equal(signin.status, 200, await signin.text());
      const dam = await json(await fetch(`${api}/auth/login?state=${encodeURIComponent(start.state)}&polling=true`));
      assert.ok(dam.access_token, JSON.stringify(dam));
      const headers = { ...auth, 'provider-authorization': `Bearer ${dam.access_token}` };
      const page = await json(await fetch(`${api}/assets/folder/root?size=500`, { headers }));
      return { sub, headers, assets: page.assets.map((a: { id: string; name: string; thumbnailUrl: string; downloadUrl: string }) => ({ id: a.id, name: a.name, thumbnailUrl: a.thumbnailUrl, downloadUrl: a.downloadUrl })) };
    },
    tempUsage() {
      let bytes = 0;
      let entries = 0;
      const walk = (dir: string) => {
        let list: fs.Dirent[];
        try {
          list = fs.readdirSync(dir, { withFileTypes: true });
        } catch {
          return; // removed while we looked
        }
        for (const e of list) {
          entries++;
          const p = path.join(dir, e.name);
          if (e.isDirectory()) walk(p);
          else {
            try {
              bytes += fs.statSync(p).size;
            } catch { /* removed while we looked */ }
          }
        }
      };
      walk(tmp);
      return { bytes, entries };
    },
    async stop() {
      await server.stop();
    },
  };
}
