/**
 * The client's tests run against the real hub in-process, listening on a loopback port so the
 * client speaks real HTTP through the platform's fetch. The hub and the client share one manual
 * clock: moving it expires tokens on both sides without sleeping.
 */
import net from 'node:net';
import { DamhubClient, type DamhubClientOptions, type LoginOpener } from '@damhub/client';
import { createPartnerSigner, generatePartnerKey, type PartnerSigner } from '@damhub/client/node';
import { addAccount } from '../../src/providers/library/accounts.js';
import { startTestHub, tempDir, type TestHub } from './hub.js';
import { TestBrowser } from './browser.js';
import { writeFiles, libraryOf } from './library.js';
import type { Provider } from '../../src/providers/contract.js';
import type { Partner } from '../../src/stores/types.js';

export interface ClientHarness {
  t: TestHub;
  /** http://127.0.0.1:<port> */
  origin: string;
  /** origin + /api/v1 */
  api: string;
  root: string | null;
  signer: PartnerSigner;
  /** How many partner JWTs the partner backend minted. */
  minted: number;
  /** A client for `sub` with the harness clock and partner signer. */
  client(o?: Partial<DamhubClientOptions> & { sub?: string }): DamhubClient;
  close(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export interface ClientHarnessOptions {
  files?: Record<string, Buffer | string>;
  providers?: Provider[];
  /** A library account; `writeFolders` as `damhub users add --write-folders` takes them ("/" for all). */
  account?: { name: string; password: string; writeFolders?: string[] };
  /** Partner fields beyond issuer and JWKS (e.g. `writes: true`). */
  partner?: Partial<Partner>;
  /** Runs after the hub started and before it listens: the last moment routes can be added. */
  beforeListen?: (t: TestHub, origin: string) => void | Promise<void>;
}

export async function startClientHarness(opts: ClientHarnessOptions = {}): Promise<ClientHarness> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const root = opts.files ? tempDir('damhub-client-lib-') : null;
  if (root) writeFiles(root, opts.files!);
  const key = generatePartnerKey();
  const issuer = 'https://partner.client.example/';
  const t = await startTestHub({
    config: { publicUrl: origin, userRateLimitPerMin: 0, ...(root ? { libraryDir: root } : {}) },
    providers: opts.providers,
    partner: { ...opts.partner, issuer, jwks: { keys: [key.publicJwk as never] } },
  });
  await t.hub.start();
  if (root && opts.account) {
    await addAccount(libraryOf(t.hub).index, opts.account.name, opts.account.password, [], t.clock.now(), { writeFolders: opts.account.writeFolders ?? [] });
  }
  await opts.beforeListen?.(t, origin);
  await t.app.listen({ port, host: '127.0.0.1' });
  const signer = createPartnerSigner({ privateKey: key.privateKeyPem, kid: key.kid, issuer, now: () => t.clock.now() });
  const h: ClientHarness = {
    t, origin, api: `${origin}/api/v1`, root, signer, minted: 0,
    client(o = {}) {
      const { sub = 'client-user', ...rest } = o;
      return new DamhubClient({
        baseUrl: h.api,
        now: () => t.clock.now(),
        getPartnerJwt: async () => {
          h.minted++;
          return signer({ sub, email: `${sub}@example.com`, name: `User ${sub}` });
        },
        // Polls wait a couple of real milliseconds (the sign-in form is submitted concurrently);
        // tests of the 5-minute horizon pass a sleep that moves the shared clock instead.
        sleep: (_ms, signal) => new Promise((resolve, reject) => {
          if (signal?.aborted) return reject(signal.reason);
          setTimeout(resolve, 2);
        }),
        ...rest,
      });
    },
    async close() {
      await t.close();
    },
  };
  return h;
}

/**
 * An opener that behaves like a person in the popup: loads the sign-in page with real fetch,
 * reads the form and submits it (or presses Cancel). `when` decides after how many polls.
 */
export function formOpener(o: { username: string; password: string; cancel?: boolean; onOpen?: (url: string) => void }): LoginOpener & { submitted: Promise<number> } {
  let resolve!: (status: number) => void;
  const submitted = new Promise<number>((r) => { resolve = r; });
  const opener = (async (url: string) => {
    o.onOpen?.(url);
    // A browser (test/helpers/browser.ts): the page sets the login's cookie, the POST carries it.
    const browser = new TestBrowser();
    const page = await browser.open(url);
    const html = page.body;
    const state = /name="state" value="([^"]+)"/.exec(html)?.[1];
    const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
    if (!state || !action) throw new Error(`not a sign-in form: ${html.slice(0, 200)}`);
    const fields: Record<string, string> = o.cancel ? { state, cancel: '1' } : { state, username: o.username, password: o.password };
    // Submitted after the opener returns, while the client is already polling.
    setImmediate(async () => {
      const res = await browser.post(new URL(action, url).href, fields);
      resolve(res.status);
    });
    return { closed: false };
  }) as unknown as LoginOpener & { submitted: Promise<number> };
  opener.submitted = submitted;
  return opener;
}
