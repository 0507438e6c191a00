/** Bynder assets, collections and metaproperties → the hub's common shape. */
import type { Asset, Conversion, Filter, Folder, Value } from '../model.js';
import { mimeTypeOfName } from '../kit/mime.js';
import type { BynderMedia, BynderMediaItem, BynderMetaproperty } from './api.js';
import { epochMs, READ_ONLY, withoutUndefined } from '../saas/asset-fields.js';


/**
 * Bynder's v4 ids are 8-4-4-16 hex in upper case; its newer APIs (Similar Assets Search) use the
 * standard 8-4-4-4-12 in lower case ("Note on identifiers" of the API reference). Both name the
 * same asset; the hub's ids are the v4 form.
 */
export const V4_ID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{16}$/;
const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;

/** The v4 form of an id in either form, or null. */
export function v4Id(id: string): string | null {
  if (V4_ID.test(id)) return id.toUpperCase();
  if (UUID.test(id)) return `${id.slice(0, 23)}${id.slice(24)}`.toUpperCase();
  return null;
}


/** The original's file name: the active original media item's, else the asset name with its extension. */
export function fileNameOf(m: BynderMedia): string {
  const active = originals(m).find((i) => isActive(i));
  if (active?.fileName) return active.fileName;
  const ext = m.extension?.[0];
  return ext && !m.name.toLowerCase().endsWith(`.${ext.toLowerCase()}`) ? `${m.name}.${ext}` : m.name;
}

const isActive = (i: BynderMediaItem) => i.active === true || i.active === 1;

/** The original media items (one per version), newest version first. */
export function originals(m: BynderMedia): BynderMediaItem[] {
  return (m.mediaItems ?? []).filter((i) => i.type === 'original' && typeof i.id === 'string').sort((a, b) => (b.version ?? 0) - (a.version ?? 0));
}

/** The version number of the active original, when Bynder lists media items. */
export function activeVersion(m: BynderMedia): number | undefined {
  return originals(m).find(isActive)?.version;
}

/** Thumbnails Bynder renders for every asset type it previews: the smallest useful one first. */
export function thumbnailSource(m: BynderMedia): string | undefined {
  const t = m.thumbnails ?? {};
  const url = t.thul ?? t.webimage ?? t.mini;
  return typeof url === 'string' && /^https?:\/\//.test(url) ? url : undefined;
}

/** The locale of Bynder's label maps (`nl_NL`) as the hub's (`nl-NL`). */
const locale = (k: string) => k.replace(/_/g, '-');

export interface Labels {
  /** Metaproperty name (lower-cased) → the metaproperty. */
  byName: Map<string, BynderMetaproperty>;
}

export function labelsOf(props: BynderMetaproperty[]): Labels {
  return { byName: new Map(props.map((p) => [p.name.toLowerCase(), p])) };
}

/** `property_<name>` fields → Values, option names shown as their labels, i18nName from the metaproperty's labels. */
export function valuesOf(m: BynderMedia, labels: Labels | null): Value[] {
  const out: Value[] = [];
  for (const [k, v] of Object.entries(m)) {
    if (!k.startsWith('property_')) continue;
    const name = k.slice('property_'.length);
    const raw = (Array.isArray(v) ? v : [v]).filter((x): x is string | number => typeof x === 'string' || typeof x === 'number').map(String);
    if (!raw.length) continue;
    const prop = labels?.byName.get(name.toLowerCase());
    const shown = raw.map((o) => {
      const opt = prop?.options?.find((x) => x.name === o || x.id === o);
      return opt?.label ?? opt?.displayLabel ?? o;
    });
    const value: Value = { id: prop?.id ?? k, type: 'TEXT', value: shown.join(', '), name: prop?.label ?? name };
    if (prop?.labels && Object.keys(prop.labels).length) value.i18nName = Object.fromEntries(Object.entries(prop.labels).map(([l, s]) => [locale(l), s]));
    out.push(value);
  }
  return out;
}

/** The `thumbnails` map as conversions (Bynder's derivatives on its CDN, public URLs). */
export function conversionsOf(m: BynderMedia): Conversion[] {
  return Object.entries(m.thumbnails ?? {})
    .filter(([, url]) => typeof url === 'string' && /^https?:\/\//.test(url))
    .map(([name, url]) => {
      const ext = /\.([a-z0-9]{2,5})(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
      return { id: name, name, url, ...(ext ? { extension: ext } : {}) };
    });
}

export interface AssetExtra {
  downloadUrl?: string;
  thumbnailUrl?: string;
  externalUrl?: string;
  labels?: Labels | null;
  /** Whole detail (conversions, values); listings carry the summary. */
  detail?: boolean;
}

export function toAsset(m: BynderMedia, extra: AssetExtra = {}): Asset {
  const fileName = fileNameOf(m);
  const version = activeVersion(m);
  const a: Asset = {
    id: m.id.toUpperCase(),
    name: fileName,
    fileSize: typeof m.fileSize === 'number' ? m.fileSize : undefined,
    xSizePx: typeof m.width === 'number' && m.width > 0 ? m.width : undefined,
    ySizePx: typeof m.height === 'number' && m.height > 0 ? m.height : undefined,
    created: epochMs(m.dateCreated),
    modified: epochMs(m.dateModified),
    mimeType: mimeTypeOfName(fileName),
    type: 'file',
    capabilities: READ_ONLY,
    title: m.name || undefined,
    caption: m.description || undefined,
    copyright: m.copyright || undefined,
    keywords: m.tags?.length ? m.tags.filter((t) => typeof t === 'string') : undefined,
    version,
    displayVersion: version,
    thumbnailUrl: extra.thumbnailUrl,
    downloadUrl: extra.downloadUrl,
    assetDetailsExternalUrl: extra.externalUrl,
  };
  if (extra.detail) {
    const conv = conversionsOf(m);
    if (conv.length) a.conversions = conv;
    const values = valuesOf(m, extra.labels ?? null);
    if (values.length) a.values = values;
  }
  withoutUndefined(a);
  return a;
}

/** One version (an original media item) of an asset. */
export function toVersion(m: BynderMedia, item: BynderMediaItem, extra: { downloadUrl?: string; externalUrl?: string }): Asset {
  const name = item.fileName || fileNameOf(m);
  const a: Asset = {
    id: m.id.toUpperCase(),
    name,
    fileSize: typeof item.size === 'number' ? item.size : undefined,
    xSizePx: typeof item.width === 'number' && item.width > 0 ? item.width : undefined,
    ySizePx: typeof item.height === 'number' && item.height > 0 ? item.height : undefined,
    created: epochMs(item.dateCreated),
    modified: epochMs(item.dateCreated),
    mimeType: mimeTypeOfName(name),
    type: 'file',
    capabilities: READ_ONLY,
    version: item.version,
    displayVersion: item.version,
    versionComment: isActive(item) ? 'current version' : `version ${item.version}`,
    downloadUrl: extra.downloadUrl,
    assetDetailsExternalUrl: extra.externalUrl,
    masterId: m.id.toUpperCase(),
  };
  withoutUndefined(a);
  return a;
}

/** Folder ids: `brand:<id>`, `subbrand:<id>`, `collection:<id>` (v4 ids), or the hub's `root`. */
export type FolderKind = 'brand' | 'subbrand' | 'collection';

export function toFolder(kind: FolderKind, c: { id: string; name: string }): Folder {
  return { id: `${kind}:${c.id.toUpperCase()}`, name: c.name };
}

/** A folder id read back; null for anything that is not one of ours. */
export function parseFolderId(id: string): { kind: FolderKind; id: string } | null {
  const m = /^(brand|subbrand|collection):(.+)$/.exec(id);
  const v = m ? v4Id(m[2]!) : null;
  return m && v ? { kind: m[1] as FolderKind, id: v } : null;
}

/**
 * Filters from Bynder's facet counts: asset type, tags, and each filterable metaproperty. An
 * option id is `<parameter>=<value>` — the documented Retrieve assets parameter (`type`, `tags`,
 * `property_<name>`) and one of its values — so applying it needs no lookup.
 */
export function filtersOf(counts: Record<string, Record<string, number>>, props: BynderMetaproperty[], active: Set<string>, uiLocale: string): Filter[] {
  const out: Filter[] = [];
  const opts = (key: string, entries: [string, number][], label: (v: string) => string) =>
    entries.filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 100)
      .map(([v, n]) => ({ id: `${key}=${v}`, isActive: active.has(`${key}=${v}`), name: label(v), count: n }));
  const lc = uiLocale.replace(/-/g, '_');
  const localized = (labels: Record<string, string> | undefined, fallback: string) =>
    labels?.[lc] ?? Object.entries(labels ?? {}).find(([k]) => k.split('_')[0] === lc.split('_')[0])?.[1] ?? fallback;
  if (counts.type) out.push({ id: 'type', name: 'Asset type', options: opts('type', Object.entries(counts.type), (v) => v) });
  for (const p of props) {
    if (p.isFilterable === false) continue;
    const c = counts[`property_${p.name}`];
    if (!c) continue;
    const options = opts(`property_${p.name}`, Object.entries(c), (v) => {
      const o = p.options?.find((x) => x.name === v);
      return o ? localized(o.labels, o.label ?? o.displayLabel ?? v) : v;
    });
    if (options.length) out.push({ id: `property_${p.name}`, name: localized(p.labels, p.label ?? p.name), options });
  }
  if (counts.tags) out.push({ id: 'tags', name: 'Tags', options: opts('tags', Object.entries(counts.tags), (v) => v) });
  return out.filter((f) => f.options.length > 0);
}

/** Active filter option ids → Retrieve assets parameters (values of one parameter comma-joined); null: not a Bynder filter id. */
export function filterParams(ids: string[]): Record<string, string> | null {
  const by = new Map<string, string[]>();
  for (const id of ids) {
    const m = /^(type|tags|property_[A-Za-z0-9_.-]{1,100})=(.{1,200})$/s.exec(id);
    if (!m || m[2]!.includes(',')) return null;
    by.set(m[1]!, [...(by.get(m[1]!) ?? []), m[2]!]);
  }
  return Object.fromEntries([...by].map(([k, v]) => [k, v.join(',')]));
}
