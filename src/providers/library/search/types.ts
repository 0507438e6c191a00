/**
 * The keyword search engine's vocabulary: the facets, the documents it is fed and the queries it
 * answers. Both index stores (../index/) and the provider speak it; nothing here knows where the
 * documents come from.
 */

export type FacetKey = 'type' | 'ext' | 'keyword' | 'year' | 'orientation';

export const FACETS: FacetKey[] = ['type', 'ext', 'keyword', 'year', 'orientation'];

/** Active filter option ids, grouped by facet ("type:image", "keyword:sunset", ...). */
export type ActiveFilters = Partial<Record<FacetKey, string[]>>;

/** Field weights of BM25F: a word in the name or title counts for more than one in the path. */
export const FIELD_WEIGHTS = { name: 10, path: 2, title: 8, caption: 4, keywords: 6, other: 1 } as const;
export type SearchField = keyof typeof FIELD_WEIGHTS;

export interface SearchDoc {
  rowid: number;
  folderPath: string;
  kind: string;
  ext: string;
  year: number | null;
  orientation: string | null;
  mtimeMs: number;
  fields: Record<SearchField, string>;
  /** Facet values of the keyword facet (lower case). */
  keywords: string[];
}

/** Scoring parameters of a result list, carried in its cursor so that later pages rank alike. */
export interface RankParams {
  idf: number[];
  avgdl: number;
}

export interface EngineQuery {
  /** Query words (already folded by `tokenize`), each matched as a prefix; empty = all. */
  words: string[];
  /** Folder to scope to, including sub-folders ('' = the whole library). */
  folderPath: string;
  /** Folders an account is limited to; null = unrestricted. */
  allowedRoots: string[] | null;
  filters: ActiveFilters;
  limit: number;
  /** Keyset position: the sort key and row id of the last row of the previous page. */
  after: { key: number; rowid: number } | null;
  /** The first page's parameters (from the cursor), so that a changing index keeps paging stable. */
  params: RankParams | null;
}

export interface EngineResult {
  rowids: number[];
  keys: number[];
  total: number;
  facets: Record<FacetKey, { value: string; count: number }[]>;
  params: RankParams | null;
}
