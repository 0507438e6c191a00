/**
 * Rate limits of the connector media routes (thumbnails and downloads served through a grant,
 * media-grants.ts). Those links need no session (an <img> cannot send headers), so the per-user
 * limit of the content routes never saw them: a flood of thumbnail requests reached the upstream
 * unchecked (issue 28). Two GCRA budgets in the hub's rate-limit store (shared by a cluster):
 *
 * - per link: one grant (a digest of its sealed token; the token itself is never a key);
 * - per partner + hub user, taken from the grant: every link a user was given, together.
 *
 * The answer is the hub's usual one: 429 hub-rate-limited with Retry-After and RateLimit-* headers
 * (src/http/auth.ts), and RateLimit-* on an allowed answer, from the tighter of the two budgets.
 * Checked after the grant is opened (a forged link costs nobody's budget) and before anything else.
 */
import { createHash } from 'node:crypto';
import { hubError } from '../../errors.js';
import type { RateLimitDecision, RateLimitStore } from '../../stores/types.js';

export interface MediaLimitsConfig {
  store: RateLimitStore;
  /** Requests per minute through one link (0: no limit). */
  perLinkPerMin: number;
  /** Requests per minute through all the links of one partner's hub user (0: no limit). */
  perUserPerMin: number;
  now(): number;
}

/** The headers to set on the answer; throws hub-rate-limited when a budget is spent. */
export async function checkMediaLimits(cfg: MediaLimitsConfig, token: string, grant: { partnerId: string; userId: string }): Promise<Record<string, string>> {
  const now = cfg.now();
  const decisions: RateLimitDecision[] = [];
  // In turn: a request the link's budget refuses costs nothing of the user's.
  if (cfg.perLinkPerMin > 0) {
    const id = createHash('sha256').update(token).digest('base64url').slice(0, 32);
    decisions.push(refuseOver(await cfg.store.hit(`media-link:${id}`, cfg.perLinkPerMin, 60_000, now), 'requests through this media link'));
  }
  if (cfg.perUserPerMin > 0) {
    decisions.push(refuseOver(await cfg.store.hit(`media-user:${grant.partnerId}:${grant.userId}`, cfg.perUserPerMin, 60_000, now), 'media requests of this user'));
  }
  if (!decisions.length) return {};
  const d = decisions.reduce((a, b) => (b.remaining < a.remaining ? b : a));
  return { 'RateLimit-Limit': String(d.limit), 'RateLimit-Remaining': String(d.remaining), 'RateLimit-Reset': String(d.resetSec) };
}

function refuseOver(d: RateLimitDecision, what: string): RateLimitDecision {
  if (d.allowed) return d;
  throw hubError('hub-rate-limited', `${what}: limit of ${d.limit} per minute reached; retry in ${d.retryAfterSec} s`, {
    headers: { 'Retry-After': String(d.retryAfterSec), 'RateLimit-Limit': String(d.limit), 'RateLimit-Remaining': '0', 'RateLimit-Reset': String(d.resetSec) },
  });
}
