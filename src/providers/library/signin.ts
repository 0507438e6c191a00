/**
 * The library's sign-in page: a real HTML form at the login's redirect_uri. A successful sign-in
 * completes the hub's login state; five wrong passwords fail it. Names are not disclosed: an
 * unknown user costs the same scrypt work as a wrong password. Every attempt is reserved with the
 * hub's sign-in throttle (src/auth/signin-throttle.ts) before the password is checked.
 */
import type { FastifyInstance } from 'fastify';
import { throttledText } from '../../auth/signin-throttle.js';
import { sendHtml } from '../../http/security-headers.js';
import type { LoginHost } from '../contract.js';
import { dummyHash, verifyPassword } from './accounts.js';
import type { LibraryIndexStore } from './index/contract.js';

const CSS = `body{font:15px/1.5 system-ui,sans-serif;background:#f3f5f8;color:#1d2330;display:flex;justify-content:center;padding:3rem 1rem;margin:0}
main{background:#fff;border:1px solid #d5d9e0;border-radius:10px;padding:2rem;max-width:22rem;width:100%}
h1{font-size:1.3rem;margin:0 0 1rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}
.row{display:flex;gap:.5rem;margin-top:1.2rem}button{flex:1;padding:.55rem;font:inherit;cursor:pointer}
.error{color:#b00020}.hint{background:#eef4ff;padding:.6rem;border-radius:6px;font-size:.9rem}
:root{color-scheme:light dark}
@media (prefers-color-scheme:dark){body{background:#161a21;color:#e8ebf1}main{background:#20252e;border-color:#3a4150}.error{color:#ff8a80}.hint{background:#27406b}a{color:#7fb0ff}}`;

const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64"><rect width="64" height="64" rx="14" fill="#2f6fde"/><path d="M18 16h8v26h20v7H18z" fill="#fff"/></svg>`;

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(title)}</title><link rel="stylesheet" href="/api/v1/auth/library/signin.css"></head><body><main>${body}</main></body></html>`;
}

export function signinRoutes(app: FastifyInstance, host: LoginHost, index: LibraryIndexStore, demo: { name: string; password: string } | null): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 8192 }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  const html = sendHtml;
  const form = (state: string, error: string | null, name = '') => page('Sign in to the library', `
    <h1>Sign in to the library</h1>
    ${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}
    ${demo ? `<p class="hint">Demo account: <strong>${esc(demo.name)}</strong> / <strong>${esc(demo.password)}</strong></p>` : ''}
    <form method="post" action="/api/v1/auth/library/signin">
      <input type="hidden" name="state" value="${esc(state)}">
      <label for="username">User name</label><input id="username" name="username" autocomplete="username" required value="${esc(name)}" autofocus>
      <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
      <div class="row"><button type="submit">Sign in</button><button type="submit" name="cancel" value="1" formnovalidate>Cancel</button></div>
    </form>`);

  app.get('/auth/library/signin.css', { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) => reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=86400').send(CSS));
  app.get('/auth/library/logo.svg', { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) => reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(LOGO));

  app.get('/auth/library/signin', { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
    const state = String((req.query as { state?: string }).state ?? '');
    const pending = await host.pending(state);
    if ('error' in pending) return html(reply, 400, page('Sign-in', `<h1>Sign-in</h1><p class="error">${esc(pending.error)}</p>`));
    return html(reply, 200, form(state, null));
  });

  app.post('/auth/library/signin', { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    const state = typeof b.state === 'string' ? b.state : '';
    const pending = await host.pending(state);
    if ('error' in pending) return html(reply, 400, page('Sign-in', `<h1>Sign-in</h1><p class="error">${esc(pending.error)}</p>`));
    if (b.cancel) {
      await host.cancel(state);
      return html(reply, 200, page('Sign-in cancelled', '<h1>Sign-in cancelled</h1><p>You can close this window.</p>'));
    }
    const name = typeof b.username === 'string' ? b.username.trim() : '';
    const password = typeof b.password === 'string' ? b.password : '';
    // Reserved before the hash, atomically: concurrent guesses beyond the budget are never checked,
    // and a refused one is answered the same whatever the password.
    const attempt = await host.reserveSignIn({ state, providerId: pending.providerId, userId: pending.userId, account: name });
    if (!attempt.allowed) {
      reply.header('retry-after', String(attempt.retryAfterSec));
      return html(reply, 429, form(state, throttledText(attempt.retryAfterSec), name));
    }
    const acc = name ? await index.accountByName(name) : null;
    const ok = await verifyPassword(password, acc?.passwordHash ?? (await dummyHash()));
    // A concurrent attempt may have ended the state while this one was checked; then the answer is
    // the settled state's, for the right password as for a wrong one.
    const settled = async () => {
      const current = await host.pending(state);
      return 'error' in current ? html(reply, 400, page('Sign-in', `<h1>Sign-in</h1><p class="error">${esc(current.error)}</p>`)) : null;
    };
    if (!acc || !ok) {
      if (attempt.lastForState) {
        await host.fail(state, 'too many failed sign-in attempts');
        return html(reply, 401, page('Sign-in failed', '<h1>Sign-in failed</h1><p class="error">Too many failed attempts. Start again from the application.</p>'));
      }
      return (await settled()) ?? html(reply, 401, form(state, 'The user name or password is not right.', name));
    }
    try {
      await host.complete(state, { credentials: { acc: acc.id }, accountId: acc.id });
    } catch (e) {
      const answer = await settled();
      if (answer) return answer;
      throw e;
    }
    await attempt.succeeded();
    return html(reply, 200, page('Signed in', `<h1>Signed in</h1><p>You are signed in to the library as <strong>${esc(acc.name)}</strong>. You can close this window and return to the application.</p>`));
  });
}
