/** Canto records → the hub's common shape. */
import type { Asset, Folder, Value } from '../model.js';
import { mimeTypeOf } from '../kit/mime.js';
import type { CantoContent, CantoNode, CantoVersion } from './api.js';
import { READ_ONLY, withoutUndefined } from '../saas/asset-fields.js';


/**
 * Canto's dates are `yyyyMMddHHmmssSSS` strings (the reference's "Date format"; no zone is given:
 * read as UTC). Anything else is left out rather than guessed.
 */
export function cantoDate(s: unknown): number | undefined {
  const m = typeof s === 'string' ? /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{3})$/.exec(s) : null;
  if (!m) return undefined;
  const [y, mo, d, h, mi, se, ms] = m.slice(1).map(Number) as [number, number, number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi, se, ms);
  return Number.isFinite(t) && new Date(t).getUTCMonth() === mo - 1 ? t : undefined;
}

const int = (v: unknown): number | undefined => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,15}$/.test(v.trim()) ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v : undefined);

/** The hub's asset id of a Canto content: its scheme and id (the detail route needs both). */
export const assetIdOf = (c: { scheme: string; id: string }) => `${c.scheme}:${c.id}`;

/** The media type: Canto's "Content Type" where it is one, else from the name. */
function mimeOf(c: CantoContent): string {
  return mimeTypeOf(c.name, isObject(c.default) ? c.default['Content Type'] : undefined);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x.length > 0) : []);

/** The version entries of a content, in Canto's order (oldest first); entries that are not records are dropped. */
export function historyOf(c: CantoContent): CantoVersion[] {
  return Array.isArray(c.versionHistory) ? c.versionHistory.filter(isObject) : [];
}

/** The number of the current version (oldest = 1): the entry marked currentVersion, else the last; undefined without history. */
export function currentVersion(history: CantoVersion[]): number | undefined {
  if (history.length === 0) return undefined;
  const i = history.findIndex((v) => v.currentVersion === true);
  return (i >= 0 ? i : history.length - 1) + 1;
}

/** Text-like values: the custom fields ("additional") and approval status, as TEXT values. */
function valuesOf(c: CantoContent): Value[] {
  const out: Value[] = [];
  if (text(c.approvalStatus)) out.push({ id: 'approvalStatus', type: 'TEXT', name: 'Approval status', value: c.approvalStatus! });
  for (const [name, v] of Object.entries(isObject(c.additional) ? c.additional : {})) {
    const value = Array.isArray(v) ? v.filter((x) => typeof x === 'string').join(', ') : typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
    if (value) out.push({ id: `additional.${name}`, type: 'TEXT', name, value });
  }
  return out;
}

export interface AssetLinks {
  downloadUrl?: string;
  thumbnailUrl?: string;
  externalUrl?: string;
}

export function toAsset(c: CantoContent, links: AssetLinks = {}, opts: { detail?: boolean } = {}): Asset {
  const keywords = [...new Set([...strings(c.keyword), ...strings(c.tag)])];
  const a: Asset = {
    id: assetIdOf(c),
    name: c.name,
    fileSize: int(c.size),
    xSizePx: int(c.width),
    ySizePx: int(c.height),
    created: cantoDate(c.created),
    // lastUploaded is when the current file (version) arrived; `time` is the record's last change.
    modified: cantoDate(c.lastUploaded) ?? cantoDate(c.time),
    mimeType: mimeOf(c),
    type: c.scheme,
    capabilities: READ_ONLY,
    caption: text(c.description),
    copyright: text(c.copyright),
    termsOfUse: text(c.termsAndConditions),
    released: text(c.approvalStatus),
    keywords: keywords.length ? keywords : undefined,
    downloadHashMd5: typeof c.md5 === 'string' && /^[0-9a-f]{32}$/i.test(c.md5) ? c.md5.toLowerCase() : undefined,
    downloadUrl: links.downloadUrl,
    thumbnailUrl: links.thumbnailUrl,
    assetDetailsExternalUrl: links.externalUrl,
  };
  if (opts.detail) {
    const values = valuesOf(c);
    if (values.length) a.values = values;
    const history = historyOf(c);
    const v = currentVersion(history);
    if (v !== undefined) {
      a.version = v;
      a.displayVersion = v;
      const comment = text(history[v - 1]!.comment);
      if (comment) a.versionComment = comment;
    }
  }
  withoutUndefined(a);
  return a;
}

/** One entry of versionHistory as an asset of the versions list (numbered oldest = 1). */
export function versionToAsset(c: CantoContent, v: CantoVersion, n: number): Asset {
  const a: Asset = {
    id: assetIdOf(c),
    name: c.name,
    mimeType: mimeOf(c),
    type: c.scheme,
    capabilities: READ_ONLY,
    version: n,
    displayVersion: n,
    modified: cantoDate(v.time),
    versionComment: text(v.comment) ?? (text(v.version) ? `version ${v.version}` : undefined),
  };
  withoutUndefined(a);
  return a;
}

/** A tree node as a hub folder: its kind rides in the id (folders hold folders and albums; albums hold content). */
export function toFolder(n: CantoNode): Folder {
  return { id: `${n.scheme === 'album' ? 'album' : 'folder'}:${n.id}`, name: n.name };
}
