/**
 * What a provider can do, with one source of truth, as rclone derives a backend's Features from
 * what it implements: an operation capability is true exactly when the provider implements the
 * operation; the rest (filters, time zones, ...) are declared once as `descriptor.features`.
 * The providers listing, the 501 answers and the picker's affordances all read `capabilitiesOf`.
 */
import { integrationError } from '../errors.js';
import { lockedByOther } from './asset-state.js';
import type { Provider, ProviderCapabilities, ProviderFeatures, ProviderSession } from './contract.js';
import type { Asset, FolderCapabilities } from './model.js';

/** Capability → the operation that provides it. */
export const OPERATIONS = {
  browse: 'browse',
  search: 'search',
  similarSearch: 'searchByImage',
  versions: 'versions',
  refresh: 'refresh',
  // Writes (docs/writes.md).
  upload: 'upload',
  update: 'update',
  rename: 'renameAsset',
  move: 'moveAsset',
  delete: 'deleteAsset',
  folders: 'createFolder',
  lock: 'lockAsset',
} as const satisfies Record<string, keyof Provider>;

/** Operations that come in pairs: implementing one without the other is a provider bug. */
const PAIRED: [keyof Provider, keyof Provider][] = [['lockAsset', 'unlockAsset']];

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
  for (const [a, b] of PAIRED) {
    if ((typeof p[a] === 'function') !== (typeof p[b] === 'function')) throw new Error(`provider ${id}: ${a} and ${b} come together`);
  }
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

/** What the account may do, as a provider states it on an asset (its permissions); absent: whatever it implements. */
type AssetPermissions = NonNullable<Asset['capabilities']>;

/**
 * The capability fields of an asset as the client sees them: true exactly when the provider
 * implements the operation, the partner has writes on (`writes`), and the account may do it on
 * this asset (the provider's own statement, and no lock of someone else's). `uploadExtensions`:
 * what a new version may be, the asset's own type (a new version keeps its name), when the
 * operator's list (`allowed`, null: any) admits it.
 */
export function assetCapabilities(caps: ProviderCapabilities, writes: boolean, asset: Asset, allowed: readonly string[] | null): AssetPermissions {
  const perm: Partial<AssetPermissions> = asset.capabilities ?? {};
  const may = (implemented: boolean, stated: boolean | undefined) => writes && implemented && stated !== false;
  const foreignLock = lockedByOther(asset);
  const canUpdateAsset = may(caps.update, perm.canUpdateAsset) && !foreignLock;
  const ext = extensionOf(asset.name);
  return {
    canDeleteAsset: may(caps.delete, perm.canDeleteAsset) && !foreignLock,
    canUpdateAsset,
    canLockAsset: may(caps.lock, perm.canLockAsset) && !asset.lockedBy,
    canUnlockAsset: may(caps.lock, perm.canUnlockAsset) && !!asset.lockedBy && !foreignLock,
    canRenameAsset: may(caps.rename, perm.canRenameAsset) && !foreignLock,
    uploadExtensions: canUpdateAsset && ext && (allowed === null || allowed.includes(ext)) ? [ext] : [],
  };
}

/** `assetCapabilities` applied to a copy of the asset (symbols kept). */
export function withAssetCapabilities<T extends Asset>(caps: ProviderCapabilities, writes: boolean, asset: T, allowed: readonly string[] | null): T {
  return { ...asset, capabilities: assetCapabilities(caps, writes, asset, allowed) };
}

/**
 * A folder answer's capability fields, by the same rule: implemented, partner writes on, and the
 * provider's statement for the folder (`stated`, absent: allowed). `uploadExtensions` (an addition
 * to the seed's fields): the provider's list for the folder narrowed by the operator's, or absent
 * when any type is taken.
 */
export function folderCapabilities(caps: ProviderCapabilities, writes: boolean, stated: Partial<FolderCapabilities> | undefined, extensions: readonly string[] | null): FolderCapabilities {
  const may = (implemented: boolean, s: boolean | undefined) => writes && implemented && s !== false;
  const out: FolderCapabilities = {
    canDeleteFolder: may(caps.folders, stated?.canDeleteFolder),
    canAddFolder: may(caps.folders, stated?.canAddFolder),
    canAddAsset: may(caps.upload, stated?.canAddAsset),
    canRenameFolder: may(caps.folders, stated?.canRenameFolder),
  };
  if (out.canAddAsset && extensions !== null) out.uploadExtensions = [...extensions];
  return out;
}

/** A file name's extension, lower case, without the dot ('' for none). */
export function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : '';
}

/**
 * The extensions uploads into `folderId` (null: an asset's own folder) may have: the provider's
 * list narrowed by the operator's (DAMHUB_UPLOAD_EXTENSIONS), or null when any is taken.
 */
export async function uploadExtensionsFor(p: Provider, session: ProviderSession, folderId: string | null, operator: readonly string[] | null): Promise<string[] | null> {
  const own = p.uploadExtensions ? await p.uploadExtensions(session, folderId) : null;
  if (own === null) return operator === null ? null : [...operator];
  const mine = own.map((e) => e.toLowerCase());
  return operator === null ? mine : mine.filter((e) => operator.includes(e));
}
