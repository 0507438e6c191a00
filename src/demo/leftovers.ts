/**
 * What demo mode may leave in a data directory, found and removed. `serve --demo --library DIR`
 * (a preview of one's own folder in the picker) used to add, for good, the library account
 * demo/demo-password with access to the whole library, the demo partner and its private key
 * (`demo-partner.json`): after a restart without --demo, `demo` still signed in and saw everything.
 *
 * Now demo mode over a real library is ephemeral: the partner's key is never written, and the
 * account and partner are removed when the hub stops. Only a crash (or an older version) leaves
 * them; a hub starting without --demo then says so, naming `damhub demo clean`. The generated demo
 * library of `npm start` (no --library) keeps its demo account, partner and key, as before.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { HubConfig } from '../config.js';
import { DEMO_LIBRARY_ACCOUNT } from '../catalog.js';
import { verifyPassword } from '../providers/library/accounts.js';
import type { LibraryIndexStore } from '../providers/library/index/contract.js';
import type { PartnerStore } from '../stores/types.js';
import { DEMO_ISSUER, DEMO_PARTNER_ID, DEMO_KEY_FILE } from './partner.js';
import { isGeneratedDemoLibrary } from './library.js';

/** Demo mode over a library of one's own: nothing of the demo outlives the process. */
export function ephemeralDemo(config: Pick<HubConfig, 'demo' | 'libraryDir'>): boolean {
  return config.demo && config.libraryDir !== null && !isGeneratedDemoLibrary(config.libraryDir);
}

export interface DemoState {
  dataDir: string;
  partners: PartnerStore;
  /** The library's index (accounts), when the data directory has one. */
  library: LibraryIndexStore | null;
}

/** The demo's account, partner and key found in this data directory, one description each. */
export async function findDemoLeftovers(s: DemoState): Promise<string[]> {
  const found: string[] = [];
  if (await demoAccount(s.library)) found.push(`the library account ${DEMO_LIBRARY_ACCOUNT.name} (password ${DEMO_LIBRARY_ACCOUNT.password}, the whole library)`);
  if ((await s.partners.get(DEMO_PARTNER_ID))?.issuer === DEMO_ISSUER) found.push(`the demo partner (id ${DEMO_PARTNER_ID})`);
  if (fs.existsSync(path.join(s.dataDir, DEMO_KEY_FILE))) found.push(`the demo partner's private key (${DEMO_KEY_FILE})`);
  return found;
}

/** Removes them (the partner with its users and sessions); returns what was removed. */
export async function removeDemoLeftovers(s: DemoState): Promise<string[]> {
  const removed = await findDemoLeftovers(s);
  if (await demoAccount(s.library)) await s.library!.removeAccount(DEMO_LIBRARY_ACCOUNT.name);
  if ((await s.partners.get(DEMO_PARTNER_ID))?.issuer === DEMO_ISSUER) await s.partners.remove(DEMO_PARTNER_ID);
  fs.rmSync(path.join(s.dataDir, DEMO_KEY_FILE), { force: true });
  return removed;
}

/** The command that removes them, for this configuration (cluster mode needs its URLs). */
export function demoCleanCommand(config: Pick<HubConfig, 'dataDir' | 'databaseUrl'>): string {
  return config.databaseUrl ? 'damhub demo clean --database-url URL --redis-url URL' : `damhub demo clean --data ${config.dataDir}`;
}

/** An account named like the demo's that signs in with the demo's published password; another `demo` is someone's own. */
async function demoAccount(index: LibraryIndexStore | null): Promise<boolean> {
  const acc = index ? await index.accountByName(DEMO_LIBRARY_ACCOUNT.name) : null;
  return acc !== null && (await verifyPassword(DEMO_LIBRARY_ACCOUNT.password, acc.passwordHash));
}
