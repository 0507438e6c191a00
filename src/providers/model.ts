/**
 * The common shape every provider maps its DAM into (the seed's resources). Declared once as JSON
 * schemas: the routes validate and serialise with them, the OpenAPI document publishes them, and
 * the TypeScript types below are derived from them, so none of the three can drift.
 */
import { Type, type Static } from '@sinclair/typebox';

const Str = Type.String();
const OptStr = Type.Optional(Type.String());
const OptInt = Type.Optional(Type.Integer());

export const ConversionSchema = Type.Object({
  id: Str,
  name: Str,
  url: Str,
  extension: OptStr,
  disabled: Type.Optional(Type.Boolean()),
  description: OptStr,
}, { $id: 'Conversion' });

export const ExifSchema = Type.Object({
  cameraModel: OptStr,
  orientation: OptStr,
  exposureTime: Type.Optional(Type.Number()),
  apertureValue: OptStr,
  isoSpeedRatings: OptStr,
  width: OptInt,
  height: OptInt,
  resolution: OptStr,
  dateTimeOriginal: OptInt,
}, { $id: 'Exif' });

export const IptcSchema = Type.Object({
  headline: OptStr, caption: OptStr, captionWriter: OptStr, instructions: OptStr, copyrightNotice: OptStr,
  credit: OptStr, city: OptStr, provinceState: OptStr, countryName: OptStr,
}, { $id: 'Iptc' });

export const XmpSchema = Type.Object({
  headline: OptStr, credit: OptStr, city: OptStr, provinceState: OptStr, countryName: OptStr,
  originalDocumentId: OptStr, documentId: OptStr, instanceId: OptStr, iccProfileDescription: OptStr,
}, { $id: 'Xmp' });

export const ValueSchema = Type.Object({
  id: Str,
  type: Type.Union(['TEXT', 'DATE', 'DATETIME', 'TIME', 'NUMBER', 'BOOLEAN', 'DRAFT_JS'].map((t) => Type.Literal(t))),
  value: Str,
  name: Str,
  i18nName: Type.Optional(Type.Record(Type.String(), Type.String())),
}, { $id: 'Value' });

export const AssetCapabilitiesSchema = Type.Object({
  canDeleteAsset: Type.Boolean(),
  canUpdateAsset: Type.Boolean(),
  canLockAsset: Type.Boolean(),
  canUnlockAsset: Type.Boolean(),
  canRenameAsset: Type.Boolean(),
  uploadExtensions: Type.Array(Str),
});

export const AssetSchema = Type.Object({
  id: Str,
  name: Str,
  parentPath: OptStr,
  fileSize: OptInt,
  xSizePx: OptInt,
  ySizePx: OptInt,
  created: OptInt,
  modified: OptInt,
  mimeType: OptStr,
  version: OptInt,
  versionComment: OptStr,
  displayVersion: OptInt,
  downloadHashMd5: OptStr,
  downloadHashSha1: OptStr,
  downloadHashSha256Split4MB: OptStr,
  downloadHashSha256First16MB: OptStr,
  downloadHashSha256: OptStr,
  downloadHashSha512: OptStr,
  downloadHashFileAttributes: OptStr,
  downloadHashCrc32: OptStr,
  thumbnailUrl: OptStr,
  downloadUrl: OptStr,
  assetDetailsExternalUrl: OptStr,
  lockedBy: OptStr,
  capabilities: Type.Optional(AssetCapabilitiesSchema),
  type: OptStr,
  conversions: Type.Optional(Type.Array(Type.Ref('Conversion'))),
  title: OptStr,
  caption: OptStr,
  copyright: OptStr,
  termsOfUse: OptStr,
  instructions: OptStr,
  colorSpace: OptStr,
  releasedBy: OptStr,
  releasedDate: OptInt,
  released: OptStr,
  keywords: Type.Optional(Type.Array(Str)),
  categories: Type.Optional(Type.Array(Str)),
  states: Type.Optional(Type.Array(Str)),
  exif: Type.Optional(Type.Ref('Exif')),
  iptc: Type.Optional(Type.Ref('Iptc')),
  xmp: Type.Optional(Type.Ref('Xmp')),
  values: Type.Optional(Type.Array(Type.Ref('Value'))),
  relatedFolderId: OptStr,
  masterId: OptStr,
}, { $id: 'Asset' });

export const FolderSchema = Type.Object({ id: Str, name: Str, relatedAssetId: OptStr }, { $id: 'Folder' });

/**
 * What the client may do in a folder (the seed's four fields). `uploadExtensions`, a hub addition:
 * the file types an upload into it may have, present only when they are limited.
 */
export const FolderCapabilitiesSchema = Type.Object({
  canDeleteFolder: Type.Boolean(),
  canAddFolder: Type.Boolean(),
  canAddAsset: Type.Boolean(),
  canRenameFolder: Type.Boolean(),
  uploadExtensions: Type.Optional(Type.Array(Str)),
}, { $id: 'FolderCapabilities' });

export const FilterSchema = Type.Object({
  id: Str,
  name: Str,
  options: Type.Array(Type.Object({ id: Str, isActive: Type.Boolean(), name: Str, count: Type.Integer() })),
}, { $id: 'Filter' });

const listFields = {
  assets: Type.Array(Type.Ref('Asset')),
  folders: Type.Array(Type.Ref('Folder')),
  filters: Type.Array(Type.Ref('Filter')),
  more: Type.Optional(Type.Union([Type.String(), Type.Number()])),
  totalAssetsCount: Type.Integer(),
};

export const SearchResultSchema = Type.Object({
  ...listFields,
  capabilities: Type.Object({ canAddAsset: Type.Boolean() }),
}, { $id: 'SearchResult' });

export const FolderResultSchema = Type.Object({
  id: Str,
  name: Str,
  ...listFields,
  capabilities: Type.Ref('FolderCapabilities'),
}, { $id: 'FolderResult' });

export const VersionsResultSchema = Type.Object({ id: Str, name: Str, versions: Type.Array(Type.Ref('Asset')) }, { $id: 'VersionsResult' });

export const MODEL_SCHEMAS = [ConversionSchema, ExifSchema, IptcSchema, XmpSchema, ValueSchema, AssetSchema, FolderSchema, FolderCapabilitiesSchema, FilterSchema, SearchResultSchema, FolderResultSchema, VersionsResultSchema];

export type Conversion = Static<typeof ConversionSchema>;
export type Exif = Static<typeof ExifSchema>;
export type Iptc = Static<typeof IptcSchema>;
export type Xmp = Static<typeof XmpSchema>;
export type Value = Static<typeof ValueSchema>;
export type Asset = Omit<Static<typeof AssetSchema>, 'conversions' | 'exif' | 'iptc' | 'xmp' | 'values'> & {
  conversions?: Conversion[];
  exif?: Exif;
  iptc?: Iptc;
  xmp?: Xmp;
  values?: Value[];
};
export type Folder = Static<typeof FolderSchema>;
export type Filter = Static<typeof FilterSchema>;

export interface AssetPage {
  assets: Asset[];
  folders: Folder[];
  filters: Filter[];
  more?: string | number;
  totalAssetsCount: number;
}

export type FolderCapabilities = Static<typeof FolderCapabilitiesSchema>;

export interface FolderPage extends AssetPage {
  id: string;
  name: string;
  /**
   * What the account may do in this folder, as the provider states it (its permissions; absent
   * fields: allowed). The hub answers these ANDed with what the provider implements and the
   * partner's write opt-in (capabilities.ts folderCapabilities).
   */
  capabilities?: Partial<FolderCapabilities>;
}

export interface VersionList {
  id: string;
  name: string;
  versions: Asset[];
}
