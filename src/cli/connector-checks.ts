/**
 * The read-only checks `damhub connectors check` runs against a live account. They speak only the
 * hub's HTTP contract (the same one partners use), so they hold for any provider and need no
 * knowledge of the account's content: the folder to page through and the search term are derived
 * from what browsing shows. The provider conformance suite (test/helpers/provider-conformance.ts)
 * asserts the same rules with fixture knowledge (a known big folder, a known asset).
 */

/** One HTTP answer as a check saw it. */
export interface Answer {
  /** What was asked, e.g. `GET /assets/folder/root?size=5`. */
  what: string;
  status: number;
  /** At most EXCERPT characters of the body; never a credential (the checks only read content routes). */
  excerpt: string;
  ms: number;
}

export interface CheckResult {
  name: string;
  outcome: 'pass' | 'fail' | 'skip';
  /** Why it failed, or what it established when it passed. */
  detail: string;
  answers: Answer[];
  ms: number;
}

export interface CheckClient {
  /** A request relative to /api/v1 with the hub session and the DAM connection attached. */
  request(method: 'GET' | 'POST', path: string, headers?: Record<string, string>): Promise<{ status: number; body: any; text: string }>;
  /** GETs an absolute URL with no session at all (a partner's server fetching a downloadUrl), reading at most maxBytes. */
  fetchPlain(url: string, maxBytes: number): Promise<{ status: number; bytes: number; truncated: boolean; contentType: string }>;
  /** The DAM refresh token of the connection, if the sign-in gave one. */
  damRefreshToken: string | null;
  /** Replaces the DAM connection after a refresh. */
  setDamTokens(access: string, refresh: string | null): void;
}

export interface CheckOptions {
  providerId: string;
  term?: string;
  /** The folder to page through; by default the fullest of the root and its first subfolders. */
  folderId?: string;
  maxAssets: number;
  maxBytes: number;
}

const EXCERPT = 200;
/** Pages followed at most in one traversal: a live folder may be huge, and the point is the paging rules, not the whole account. */
const MAX_PAGES = 20;

class CheckFailure extends Error {}

function fail(message: string): never {
  throw new CheckFailure(message);
}

const q = (params: Record<string, string | number | undefined>) =>
  Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`).join('&');

/** Runs one check, recording every answer it saw; an unexpected exception is that check's failure, not the run's. */
class Recorder {
  answers: Answer[] = [];
  constructor(private readonly client: CheckClient) {}

  async call(method: 'GET' | 'POST', path: string, headers?: Record<string, string>) {
    const t0 = performance.now();
    const r = await this.client.request(method, path, headers);
    const text = r.text.replace(/\s+/g, ' ');
    this.answers.push({ what: `${method} ${path}`, status: r.status, excerpt: text.length > EXCERPT ? `${text.slice(0, EXCERPT)}…` : text, ms: Math.round(performance.now() - t0) });
    return r;
  }

  /** GET that must answer 200 with a JSON object; otherwise the check fails quoting the answer. */
  async ok(path: string): Promise<any> {
    const r = await this.call('GET', path);
    if (r.status !== 200) fail(`GET ${path} answered ${r.status}: ${errorText(r.body, r.text)}`);
    if (!r.body || typeof r.body !== 'object') fail(`GET ${path} answered 200 without a JSON object`);
    return r.body;
  }
}

function errorText(body: any, text: string): string {
  const e = body?.error;
  if (e && typeof e === 'object') return `${e.code}${e.details ? `: ${e.details}` : e.message ? `: ${e.message}` : ''}`;
  return text.slice(0, EXCERPT);
}

function pageShape(p: any, where: string, size: number) {
  if (!Array.isArray(p.assets) || !Array.isArray(p.folders)) fail(`${where}: assets and folders must be arrays`);
  if (typeof p.totalAssetsCount !== 'number') fail(`${where}: totalAssetsCount must be a number`);
  if (p.assets.length > size) fail(`${where}: ${p.assets.length} assets on a page of size ${size}`);
  if (p.more !== undefined && typeof p.more !== 'string' && typeof p.more !== 'number') fail(`${where}: more must be a string or number`);
}

/** What the checks learn on the way and hand to later checks. */
interface Seen {
  caps: Record<string, unknown>;
  paging: { defaultSize: number; maxSize: number };
  rootFolders: { id: string; name: string }[];
  /** A folder with assets (root if it has any), its first page, and the assets met while browsing. */
  folderId: string | null;
  total: number;
  assets: any[];
}

/** Runs the checks in order, appending each result to `results` as it finishes (so a caller that stops waiting still has them). */
export async function runChecks(client: CheckClient, o: CheckOptions, results: CheckResult[] = []): Promise<CheckResult[]> {
  const seen: Seen = { caps: {}, paging: { defaultSize: 50, maxSize: 200 }, rootFolders: [], folderId: null, total: 0, assets: [] };
  const id = o.providerId;
  const enc = encodeURIComponent;

  async function check(name: string, run: (r: Recorder) => Promise<string | { skip: string }>): Promise<boolean> {
    const r = new Recorder(client);
    const t0 = performance.now();
    let outcome: CheckResult['outcome'] = 'pass';
    let detail: string;
    try {
      const out = await run(r);
      if (typeof out === 'string') detail = out;
      else {
        outcome = 'skip';
        detail = out.skip;
      }
    } catch (e) {
      outcome = 'fail';
      detail = e instanceof CheckFailure ? e.message : `unexpected ${(e as Error).name}: ${(e as Error).message}`;
    }
    results.push({ name, outcome, detail, answers: r.answers, ms: Math.round(performance.now() - t0) });
    return outcome !== 'fail';
  }

  /** The error envelope of the hub's contract for an integration error of this provider. */
  function integrationError(r: { status: number; body: any; text: string }, code: string, status: number, what: string) {
    if (r.status !== status || r.body?.error?.code !== code) fail(`${what}: expected ${status} ${code}, got ${r.status}: ${errorText(r.body, r.text)}`);
    if (r.body.error.source !== 'integration' || r.body.error.provider !== id) fail(`${what}: the error must name source "integration" and provider "${id}"`);
  }

  const listed = await check('providers: listed with capabilities and paging', async (r) => {
    const list = await r.ok('/auth/providers');
    if (!Array.isArray(list)) fail('GET /auth/providers must answer an array');
    const p = list.find((x: any) => x?.id === id);
    if (!p) fail(`provider ${id} is not listed (listed: ${list.map((x: any) => x?.id).join(', ')})`);
    if (!p.capabilities || typeof p.capabilities !== 'object') fail('the listing carries no capabilities');
    const { defaultSize, maxSize } = p.paging ?? {};
    if (!(Number.isInteger(defaultSize) && defaultSize >= 1 && Number.isInteger(maxSize) && maxSize >= defaultSize)) fail(`paging limits must be 1 <= defaultSize <= maxSize, got ${JSON.stringify(p.paging)}`);
    seen.caps = p.capabilities;
    seen.paging = { defaultSize, maxSize };
    const on = Object.entries(p.capabilities).filter(([, v]) => v === true).map(([k]) => k);
    return `capabilities: ${on.join(', ') || 'none'}; paging ${defaultSize}/${maxSize}`;
  });
  if (!listed) return results;

  const browsed = await check('browse: root folder', async (r) => {
    const size = seen.paging.defaultSize;
    const p = await r.ok(`/assets/folder/root?size=${size}`);
    pageShape(p, 'root', size);
    seen.rootFolders = p.folders.filter((f: any) => typeof f?.id === 'string');
    if (seen.rootFolders.length !== p.folders.length) fail('every folder needs a string id');
    seen.assets.push(...p.assets);
    if (!o.folderId && p.totalAssetsCount > 0) {
      seen.folderId = 'root';
      seen.total = p.totalAssetsCount;
    }
    return `${p.folders.length} folders, ${p.totalAssetsCount} assets`;
  });
  if (!browsed) return results;

  await check('browse: folder ids round-trip', async (r) => {
    const folders = seen.rootFolders.slice(0, 5);
    if (!folders.length) return { skip: 'the root has no subfolders' };
    for (const f of folders) {
      const p = await r.ok(`/assets/folder/${enc(f.id)}?size=${seen.paging.defaultSize}`);
      pageShape(p, `folder ${f.id}`, seen.paging.defaultSize);
      seen.assets.push(...p.assets);
      // Paging is checked in the fullest folder met (unless --folder names one).
      if (!o.folderId && p.totalAssetsCount > seen.total) {
        seen.folderId = f.id;
        seen.total = p.totalAssetsCount;
      }
    }
    return `${folders.length} of ${seen.rootFolders.length} folders opened by their ids`;
  });

  await check('browse: paging (sizes, cursors, no duplicates, totalAssetsCount)', async (r) => {
    if (o.folderId) {
      const p = await r.ok(`/assets/folder/${enc(o.folderId)}?size=1`);
      seen.folderId = o.folderId;
      seen.total = p.totalAssetsCount;
    }
    if (!seen.folderId) return { skip: 'no folder with assets among the root and its first subfolders (name one with --folder)' };
    const folder = seen.folderId;
    if (seen.total < 2) return { skip: `folder ${folder} has ${seen.total} asset: nothing to page` };
    // Pages small enough to need several, few enough to stay within MAX_PAGES.
    const size = Math.min(seen.paging.maxSize, Math.max(1, Math.ceil(seen.total / 3), Math.ceil(seen.total / MAX_PAGES)));
    const pages = await traverse(r, `/assets/folder/${enc(folder)}`, { size }, size);
    const ids = pages.flatMap((p) => p.assets.map((a: any) => a.id));
    const dup = ids.find((x, i) => ids.indexOf(x) !== i);
    if (dup !== undefined) fail(`asset ${JSON.stringify(dup)} appears twice across the pages of folder ${folder}`);
    if (pages.at(-1)!.more === undefined && ids.length !== pages[0].totalAssetsCount) fail(`folder ${folder}: ${ids.length} assets over ${pages.length} pages, but totalAssetsCount says ${pages[0].totalAssetsCount}`);
    for (const [i, p] of pages.entries()) {
      if (p.totalAssetsCount !== pages[0].totalAssetsCount) fail(`page ${i + 1} says totalAssetsCount ${p.totalAssetsCount}, the first said ${pages[0].totalAssetsCount}`);
      if (i > 0 && seen.caps.foldersOnEveryPage !== true && p.folders.length) fail(`page ${i + 1} repeats folders although the provider does not declare foldersOnEveryPage`);
    }
    const big = await r.ok(`/assets/folder/${enc(folder)}?size=1000000`);
    if (big.assets.length > seen.paging.maxSize) fail(`size=1000000 gave ${big.assets.length} assets, above maxSize ${seen.paging.maxSize}`);
    const bad = await r.call('GET', `/assets/folder/${enc(folder)}?size=${size}&more=${enc(`${String(pages[0].more ?? 'x')}x`)}`);
    if (bad.status !== 400 || bad.body?.error?.code !== 'hub-validation-error') fail(`an altered more must be a 400 hub-validation-error, got ${bad.status}`);
    seen.assets.push(...pages.flatMap((p) => p.assets));
    const all = pages.at(-1)!.more === undefined;
    return `${ids.length} assets in ${pages.length} pages of ${size}${all ? '' : ` (stopped after ${MAX_PAGES} pages)`}; oversized page clamped; altered cursor refused`;
  });

  await check('search', async (r) => {
    if (seen.caps.search !== true) {
      integrationError(await r.call('GET', '/assets/search?query=x'), 'integration-not-supported', 501, 'search without the capability');
      return 'not offered: answers 501 integration-not-supported';
    }
    const term = o.term ?? termFrom(seen.assets);
    if (!term) return { skip: 'no term given (--term) and no asset name to derive one from' };
    const size = seen.paging.defaultSize;
    const pages = await traverse(r, '/assets/search', { query: term, size }, size);
    const ids = pages.flatMap((p) => p.assets.map((a: any) => a.id));
    const dup = ids.find((x, i) => ids.indexOf(x) !== i);
    if (dup !== undefined) fail(`asset ${JSON.stringify(dup)} appears twice in the results for ${JSON.stringify(term)}`);
    if (pages.at(-1)!.more === undefined && ids.length !== pages[0].totalAssetsCount) fail(`${ids.length} hits but totalAssetsCount ${pages[0].totalAssetsCount}`);
    if (!o.term && ids.length === 0) fail(`no hit for ${JSON.stringify(term)}, a word of an asset name seen while browsing`);
    return `${JSON.stringify(term)}: ${pages[0].totalAssetsCount} hits in ${pages.length} pages`;
  });

  const sample = uniqueById(seen.assets).slice(0, o.maxAssets);
  const details: any[] = [];
  await check('asset detail: absolute URLs, declared hash', async (r) => {
    if (!sample.length) return { skip: 'no asset seen while browsing' };
    const alg = typeof seen.caps.assetHashAlgorithm === 'string' ? seen.caps.assetHashAlgorithm : null;
    for (const s of sample) {
      const a = await r.ok(`/assets/asset/${enc(s.id)}`);
      if (a.id !== s.id) fail(`asset ${s.id} answered with id ${JSON.stringify(a.id)}`);
      if (typeof a.name !== 'string') fail(`asset ${s.id} has no name`);
      for (const k of ['thumbnailUrl', 'downloadUrl']) {
        if (a[k] && !/^https?:\/\//.test(a[k])) fail(`asset ${s.id}: ${k} is not an absolute URL`);
      }
      if (alg && !/^[0-9a-f]+$/.test(String(a[`downloadHash${alg}`] ?? ''))) fail(`asset ${s.id} lacks downloadHash${alg}, the declared hash`);
      details.push(a);
    }
    return `${details.length} assets${alg ? `, each with downloadHash${alg}` : ''}`;
  });

  await check('download: downloadUrl with no session', async (r) => {
    const a = details.find((x) => typeof x.downloadUrl === 'string');
    if (!a) return { skip: details.length ? 'no asset carries a downloadUrl' : 'no asset detail to download' };
    const t0 = performance.now();
    const d = await client.fetchPlain(a.downloadUrl, o.maxBytes).catch((e: Error) => fail(`the downloadUrl of ${a.id}: ${e.message}`));
    r.answers.push({ what: `GET downloadUrl of ${a.id}`, status: d.status, excerpt: `${d.bytes} bytes${d.truncated ? ' (stopped at --max-bytes)' : ''}, ${d.contentType || 'no content-type'}`, ms: Math.round(performance.now() - t0) });
    if (d.status !== 200 && d.status !== 206) fail(`the downloadUrl of ${a.id} answered ${d.status} without a session`);
    if (!d.truncated && typeof a.fileSize === 'number' && a.fileSize !== d.bytes) fail(`${a.id}: downloaded ${d.bytes} bytes, the asset says fileSize ${a.fileSize}`);
    return `${a.id}: ${d.bytes} bytes${d.truncated ? ' (capped)' : ''}`;
  });

  await check('versions', async (r) => {
    const a = sample[0];
    if (!a) return { skip: 'no asset seen while browsing' };
    const path = `/assets/assetversions/${enc(a.id)}`;
    if (seen.caps.versions !== true) {
      integrationError(await r.call('GET', path), 'integration-not-supported', 501, 'versions without the capability');
      return 'not offered: answers 501 integration-not-supported';
    }
    const v = await r.ok(path);
    const list = Array.isArray(v) ? v : v.versions;
    if (!Array.isArray(list)) fail('the versions answer carries no list');
    return `${a.id}: ${list.length} versions`;
  });

  await check('unknown ids: integration-not-found', async (r) => {
    integrationError(await r.call('GET', '/assets/asset/no-such-asset-id'), 'integration-not-found', 404, 'an unknown asset');
    integrationError(await r.call('GET', `/assets/folder/${enc('/no/such/folder')}`), 'integration-not-found', 404, 'an unknown folder');
    return 'unknown asset and folder answer 404 integration-not-found';
  });

  await check('refresh', async (r) => {
    if (seen.caps.refresh !== true) return { skip: 'the provider does not offer refresh' };
    if (!client.damRefreshToken) fail('the sign-in gave no refresh token although the provider offers refresh');
    const res = await r.call('GET', '/auth/refreshToken', { 'provider-authorization': `Bearer ${client.damRefreshToken}` });
    if (res.status !== 200 || typeof res.body?.access_token !== 'string') fail(`renewing the connection answered ${res.status}: ${errorText(res.body, res.text)}`);
    client.setDamTokens(res.body.access_token, res.body.refresh_token ?? null);
    // The renewed connection must work: one page of the root with it.
    await r.ok('/assets/folder/root?size=1');
    return 'the connection was renewed and the new token browses';
  });

  return results;
}

/** Follows `more` to the end (at most MAX_PAGES pages), checking each page's shape. */
async function traverse(r: Recorder, path: string, params: Record<string, string | number>, size: number): Promise<any[]> {
  const pages: any[] = [];
  let more: string | undefined;
  const seenCursors = new Set<string>();
  for (let i = 0; i < MAX_PAGES; i++) {
    const p = await r.ok(`${path}?${q({ ...params, more })}`);
    pageShape(p, `page ${i + 1} of ${path}`, size);
    pages.push(p);
    if (p.more === undefined) return pages;
    more = String(p.more);
    if (seenCursors.has(more)) fail(`page ${i + 1} of ${path} repeats an earlier cursor`);
    seenCursors.add(more);
  }
  return pages;
}

/** A search word from the names seen: the word of at least three letters most names share (ties: the longer), so that search has hits to page. */
export function termFrom(assets: any[]): string | null {
  const count = new Map<string, number>();
  for (const a of uniqueById(assets)) {
    if (typeof a.name !== 'string') continue;
    const words = new Set<string>(a.name.replace(/\.[^.]*$/, '').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w: string) => w.length >= 3 && /\p{L}/u.test(w)));
    for (const w of words) count.set(w, (count.get(w) ?? 0) + 1);
  }
  const best = [...count].sort((x, y) => y[1] - x[1] || y[0].length - x[0].length || (x[0] < y[0] ? -1 : 1))[0];
  return best ? best[0] : null;
}

function uniqueById(assets: any[]): any[] {
  const m = new Map<string, any>();
  for (const a of assets) if (typeof a?.id === 'string' && !m.has(a.id)) m.set(a.id, a);
  return [...m.values()];
}
