/**
 * What a provider can do, with one source of truth, as rclone derives a backend's Features from
 * what it implements: an operation capability is true exactly when the provider implements the
 * operation; the rest (filters, time zones, ...) are declared once as `descriptor.features`.
 * The providers listing, the 501 answers and the picker's affordances all read `capabilitiesOf`.
 */
import { integrationError } from '../errors.js';
import type { Provider, ProviderCapabilities, ProviderFeatures } from './contract.js';

/** Capability → the operation that provides it. */
export const OPERATIONS = {
  browse: 'browse',
  search: 'search',
  similarSearch: 'searchByImage',
  versions: 'versions',
  refresh: 'refresh',
} as const satisfies Record<string, keyof Provider>;

export type OperationCapability = keyof typeof OPERATIONS;

const NO_FEATURES: ProviderFeatures = {
  filters: false, dataLocalization: false, timeZone: false, serverUrl: false, foldersOnEveryPage: false, assetHashAlgorithm: null,
};

/** Declared features with their defaults (undeclared: false / null). */
export function featuresOf(p: Provider): ProviderFeatures {
  return { ...NO_FEATURES, ...p.descriptor.features };
}

/** The listing's capabilities: the declared features plus one flag per implemented operation. */
export function capabilitiesOf(p: Provider): ProviderCapabilities {
  const ops = Object.fromEntries(Object.entries(OPERATIONS).map(([cap, op]) => [cap, typeof p[op] === 'function'])) as Record<OperationCapability, boolean>;
  return { ...ops, ...featuresOf(p) };
}

/** Checks what cannot be derived; the registry runs it for every provider it registers. */
export function checkProvider(p: Provider): void {
  const id = p.descriptor.id;
  for (const key of Object.keys(p.descriptor.features)) {
    if (!(key in NO_FEATURES)) throw new Error(`provider ${id}: unknown feature ${JSON.stringify(key)} (operations declare themselves: ${Object.keys(OPERATIONS).join(', ')})`);
  }
  const { defaultSize, maxSize } = p.descriptor.paging;
  if (!(defaultSize >= 1 && maxSize >= defaultSize)) throw new Error(`provider ${id}: paging sizes`);
}

type Op<K extends OperationCapability> = NonNullable<Provider[(typeof OPERATIONS)[K]]>;

/**
 * The provider's operation for `cap`, bound to it; a provider that does not implement it answers
 * 501 integration-not-supported naming `what`.
 */
export function operation<K extends OperationCapability>(p: Provider, cap: K, what: string): Op<K> {
  const fn = p[OPERATIONS[cap]] as Op<K> | undefined;
  if (typeof fn !== 'function') throw integrationError('integration-not-supported', p.descriptor.id, `${p.descriptor.name} does not support ${what}`);
  return (fn as (...a: unknown[]) => unknown).bind(p) as Op<K>;
}
