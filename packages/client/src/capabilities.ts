/**
 * What a provider can do, read from the providers listing (GET /auth/providers) and the provider
 * info (GET /system/providerInfo), and `$name$` URL placeholder resolution.
 */
import { clientError } from './errors.js';
import type { ProviderInfoResult, ProviderListItem } from './generated/types.js';

/**
 * The capability flags damhub declares per provider: the generated type of the providers listing
 * (its schema is closed, so every flag is there). Missing ones read false (capabilitiesOf).
 */
export type ProviderCapabilities = ProviderListItem['capabilities'];

export type Capability = Exclude<keyof ProviderCapabilities, 'assetHashAlgorithm'>;

const FLAGS: Capability[] = ['browse', 'search', 'similarSearch', 'versions', 'refresh', 'filters', 'dataLocalization', 'timeZone', 'serverUrl', 'foldersOnEveryPage'];

/** Normalised capabilities: every known flag a boolean (absent = false). */
export function capabilitiesOf(p: Pick<ProviderListItem, 'capabilities'> | null | undefined): ProviderCapabilities {
  const raw = (p?.capabilities ?? {}) as Record<string, unknown>;
  const out = { ...raw } as Record<string, unknown>;
  for (const f of FLAGS) out[f] = raw[f] === true;
  out.assetHashAlgorithm = typeof raw.assetHashAlgorithm === 'string' ? raw.assetHashAlgorithm : null;
  return out as unknown as ProviderCapabilities;
}

export function supports(p: Pick<ProviderListItem, 'capabilities'> | null | undefined, capability: Capability): boolean {
  return capabilitiesOf(p)[capability];
}

/** The provider marked isDefault, else the first one, else null. */
export function defaultProvider<T extends Pick<ProviderListItem, 'isDefault'>>(list: readonly T[]): T | null {
  return list.find((p) => p.isDefault) ?? list[0] ?? null;
}

/** Page size to use for a provider: the requested one clamped to its maximum, else its default. */
export function pageSizeFor(p: Pick<ProviderListItem, 'paging'> | null | undefined, requested?: number): number | undefined {
  const paging = p?.paging;
  if (!paging) return requested;
  if (!requested || requested <= 0) return paging.defaultSize;
  return Math.min(requested, paging.maxSize);
}

/** One data locale of GET /system/providerInfo. */
export type DataLocale = NonNullable<ProviderInfoResult['dataLocales']>[number];

/** GET /system/providerInfo: its fields are the generated type's (the schema is closed). */
export type ProviderInfo = ProviderInfoResult;

/** The data locales the provider lists (empty when it has no data localization). */
export function dataLocalesOf(info: ProviderInfoResult | null | undefined): DataLocale[] {
  const list = (info as ProviderInfo | null | undefined)?.dataLocales;
  return Array.isArray(list) ? list.filter((l): l is DataLocale => !!l && typeof l === 'object' && typeof (l as DataLocale).id === 'string') : [];
}

/** The default data locale id: the one marked default, else the first, else undefined. */
export function defaultDataLocale(info: ProviderInfoResult | null | undefined): string | undefined {
  const list = dataLocalesOf(info);
  return (list.find((l) => l.default) ?? list[0])?.id;
}

const PLACEHOLDER = /\$([A-Za-z_][A-Za-z0-9_.-]*)\$/g;

/** The placeholder names in a URL (`$name$`). */
export function placeholdersIn(url: string): string[] {
  return [...new Set([...url.matchAll(PLACEHOLDER)].map((m) => m[1]!))];
}

export function hasPlaceholders(url: string | undefined | null): boolean {
  return !!url && placeholdersIn(url).length > 0;
}

/**
 * Replaces every `$name$` in a URL with `values[name]`, URL-encoded (a value given as
 * `{raw: "..."}` is inserted as is, e.g. a base URL). A placeholder without a value throws
 * `client-placeholder-unresolved` unless `{strict: false}`, which leaves it in place.
 */
export function resolvePlaceholders(url: string, values: Record<string, string | number | { raw: string } | undefined>, opts: { strict?: boolean } = {}): string {
  const strict = opts.strict ?? true;
  const missing: string[] = [];
  const out = url.replace(PLACEHOLDER, (whole, name: string) => {
    const v = values[name];
    if (v === undefined) {
      missing.push(name);
      return whole;
    }
    return typeof v === 'object' ? v.raw : encodeURIComponent(String(v));
  });
  if (strict && missing.length) throw clientError('client-placeholder-unresolved', `no value for URL placeholder(s) ${missing.map((m) => `$${m}$`).join(', ')}`);
  return out;
}
