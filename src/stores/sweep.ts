/**
 * A node's periodic clean-up (src/cli/serve.ts): what the stores keep past its use (expired
 * sessions, replay keys, login states, Idempotency-Key records, write locks) and the write audit's
 * entries older than its retention (DAMHUB_AUDIT_RETENTION). In cluster mode every node sweeps;
 * the deletes are idempotent, so they need no coordination.
 */
import type { Stores } from './types.js';

const DAY_MS = 86_400_000;

export async function sweepStores(stores: Stores, now: number, auditRetentionDays: number): Promise<{ auditPruned: number }> {
  await stores.sweep(now);
  return { auditPruned: await stores.audit.prune(now - auditRetentionDays * DAY_MS) };
}
