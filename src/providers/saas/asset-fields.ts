/** Small pieces every connector's mapping (upstream record → Asset) needs alike. */
import type { Asset } from '../model.js';

/** The hub is read-only: no connector asset can be changed through it. */
export const READ_ONLY: NonNullable<Asset['capabilities']> = { canDeleteAsset: false, canUpdateAsset: false, canLockAsset: false, canUnlockAsset: false, canRenameAsset: false, uploadExtensions: [] };

/** An ISO date as epoch ms; absent or unparsable: undefined (left out rather than guessed). */
export function epochMs(iso: string | null | undefined): number | undefined {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(t) ? t : undefined;
}

/** Drops the keys whose value is undefined, so an answer carries no empty fields; returns `o`. */
export function withoutUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}
