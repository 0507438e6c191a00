/**
 * The library's sign-in: the connector kit's form (src/providers/kit/signin-form.ts) checked against
 * the library's own accounts. Names are not disclosed: an unknown user costs the same scrypt work
 * as a wrong password. The kit reserves every attempt with the hub's sign-in throttle before this
 * check runs, and fails the login state after five wrong passwords.
 */
import type { FastifyInstance } from 'fastify';
import { integrationError } from '../../errors.js';
import type { LoginHost } from '../contract.js';
import { formSignInRoutes, type MountedForm } from '../kit/signin-form.js';
import { dummyHash, verifyPassword } from './accounts.js';
import type { LibraryIndexStore } from './index/contract.js';

export function librarySignInForm(providerId: string, index: LibraryIndexStore, demo: { name: string; password: string } | null): MountedForm<{ acc: string }> {
  return {
    title: 'libraryTitle',
    fields: [
      { name: 'username', label: 'userName', autocomplete: 'username' },
      { name: 'password', label: 'password', type: 'password' },
    ],
    hint: demo ? ['demoAccount', { n: demo.name, p: demo.password }] : undefined,
    rejectedText: 'libraryRejected',
    signedInText: (r) => ['librarySignedIn', { n: r.displayName }],
    async verify(values) {
      const name = values.username ?? '';
      const acc = name ? await index.accountByName(name) : null;
      const ok = await verifyPassword(values.password ?? '', acc?.passwordHash ?? (await dummyHash()));
      if (!acc || !ok) throw integrationError('integration-auth-failed', providerId, 'wrong user name or password');
      return { credentials: { acc: acc.id }, accountId: acc.id, displayName: acc.name };
    },
  };
}

const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64"><rect width="64" height="64" rx="14" fill="#2f6fde"/><path d="M18 16h8v26h20v7H18z" fill="#fff"/></svg>`;

/** The form at /auth/{providerId}/signin and the library's logo (the descriptor's `logo`). */
export function librarySignInRoutes(app: FastifyInstance, host: LoginHost, providerId: string, index: LibraryIndexStore, demo: { name: string; password: string } | null): void {
  formSignInRoutes(app, host, providerId, librarySignInForm(providerId, index, demo));
  app.get(`/auth/${providerId}/logo.svg`, { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) =>
    reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(LOGO));
}
