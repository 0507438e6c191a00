/**
 * A writable DAM in memory, for the write engine's own tests (test/content/asset-writes.test.ts)
 * and as the write conformance suite's proof that it can fail: folders, assets with versions,
 * locks per account, and permissions (the account "viewer" may only read). It has no
 * conditional writes and yields between reading and writing, so only the hub's write lock keeps
 * concurrent updates with the same If-Match from both winning.
 */
import { randomUUID } from 'node:crypto';
import { setImmediate as tick } from 'node:timers/promises';
import { hubError, integrationError } from '../../src/errors.js';
import { tagAsset } from '../../src/providers/asset-state.js';
import type { Provider, ProviderSession, UploadBody } from '../../src/providers/contract.js';
import type { Asset, Folder } from '../../src/providers/model.js';
import { alternativeName } from '../../src/providers/names.js';
import { testProvider } from './test-provider.js';

interface MemFolder { id: string; name: string; parent: string | null }
interface MemAsset { id: string; name: string; parent: string; versions: Buffer[]; lock: string | null }

export interface MemoryDam extends Provider {
  folders: Map<string, MemFolder>;
  assets: Map<string, MemAsset>;
  /** Bodies the provider began to read (a refused upload must not get here). */
  bodiesOpened: number;
  /** Set to fail the next body read half-way (a dying upstream). */
  failNextBody: boolean;
}

const account = (s: ProviderSession) => String(s.credentials.account);
const mayWrite = (s: ProviderSession) => account(s) !== 'viewer';

export function memoryDam(id = 'memdam'): MemoryDam {
  const base = testProvider({ id });
  const folders = new Map<string, MemFolder>([['root', { id: 'root', name: 'Memory', parent: null }]]);
  const assets = new Map<string, MemAsset>();
  const dam = base as unknown as MemoryDam;

  const folderOf = (fid: string) => {
    const f = folders.get(fid);
    if (!f) throw integrationError('integration-not-found', id, `no folder ${fid}`);
    return f;
  };
  const assetOf = (aid: string) => {
    const a = assets.get(aid);
    if (!a) throw integrationError('integration-not-found', id, `no asset ${aid}`);
    return a;
  };
  const forbidIfViewer = (s: ProviderSession) => {
    if (!mayWrite(s)) throw integrationError('integration-forbidden', id, 'this account may only read');
  };
  const nameTaken = (parent: string, name: string, except?: string) =>
    [...assets.values()].some((a) => a.parent === parent && a.name.toLowerCase() === name.toLowerCase() && a.id !== except)
    || [...folders.values()].some((f) => f.parent === parent && f.name.toLowerCase() === name.toLowerCase() && f.id !== except);
  const view = (s: ProviderSession, a: MemAsset, version = a.versions.length): Asset => {
    const bytes = a.versions[version - 1]!;
    const perm = mayWrite(s);
    return tagAsset({
      id: a.id, name: a.name, parentPath: a.parent, fileSize: bytes.length, version, mimeType: 'application/octet-stream', downloadUrl: a.id,
      ...(a.lock ? { lockedBy: a.lock } : {}),
      capabilities: { canDeleteAsset: perm, canUpdateAsset: perm, canLockAsset: perm, canUnlockAsset: perm, canRenameAsset: perm, uploadExtensions: [] },
    }, { contentTag: `${a.id}@${version}`, lockedByOther: a.lock !== null && a.lock !== account(s) });
  };
  const read = async (body: UploadBody): Promise<Buffer> => {
    dam.bodiesOpened++;
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of body.stream) {
      chunks.push(c as Buffer);
      n += (c as Buffer).length;
      if (dam.failNextBody && n > 0) {
        dam.failNextBody = false;
        throw integrationError('integration-unavailable', id, 'the upstream went away mid-body', { status: 502 });
      }
    }
    return Buffer.concat(chunks);
  };
  const checkLock = (s: ProviderSession, a: MemAsset) => {
    if (a.lock && a.lock !== account(s)) throw hubError('asset-locked', `locked by ${a.lock}`);
  };

  Object.assign(dam, {
    folders, assets, bodiesOpened: 0, failNextBody: false,
    async browse(s: ProviderSession, fid: string) {
      const f = folderOf(fid);
      const list = [...assets.values()].filter((a) => a.parent === f.id).sort((x, y) => x.name.localeCompare(y.name));
      return {
        id: f.id, name: f.name, filters: [], totalAssetsCount: list.length,
        folders: [...folders.values()].filter((c) => c.parent === f.id).map((c) => ({ id: c.id, name: c.name })),
        assets: list.map((a) => view(s, a)),
        capabilities: mayWrite(s) ? {} : { canAddAsset: false, canAddFolder: false, canDeleteFolder: false, canRenameFolder: false },
      };
    },
    async search(s: ProviderSession, q: { query: string }) {
      const hits = [...assets.values()].filter((a) => a.name.toLowerCase().includes(q.query.toLowerCase()));
      return { folders: [], assets: hits.map((a) => view(s, a)), filters: [], totalAssetsCount: hits.length };
    },
    async asset(s: ProviderSession, aid: string) {
      return view(s, assetOf(aid));
    },
    async versions(s: ProviderSession, aid: string) {
      const a = assetOf(aid);
      return { id: a.id, name: a.name, versions: a.versions.map((_, i) => view(s, a, i + 1)).reverse() };
    },
    async upload(s: ProviderSession, t: { parentId: string; name: string; onConflict: string }, body: UploadBody) {
      forbidIfViewer(s);
      folderOf(t.parentId);
      let name = t.name;
      const existing = [...assets.values()].find((a) => a.parent === t.parentId && a.name.toLowerCase() === name.toLowerCase());
      if (existing || nameTaken(t.parentId, name)) {
        if (t.onConflict === 'fail') throw hubError('asset-exists', `${name} exists`);
        if (t.onConflict === 'version' && existing) {
          checkLock(s, existing);
          const bytes = await read(body);
          existing.versions.push(bytes);
          return { asset: view(s, existing), created: false };
        }
        for (let n = 2; nameTaken(t.parentId, name); n++) name = alternativeName(t.name, n);
      }
      const bytes = await read(body);
      await tick();
      const a: MemAsset = { id: randomUUID(), name, parent: t.parentId, versions: [bytes], lock: null };
      assets.set(a.id, a);
      return { asset: view(s, a), created: true };
    },
    async update(s: ProviderSession, aid: string, body: UploadBody) {
      forbidIfViewer(s);
      const a = assetOf(aid);
      checkLock(s, a);
      const bytes = await read(body);
      // No conditional write here: yield, so that racing updates interleave unless the hub serialises them.
      await tick();
      a.versions.push(bytes);
      return view(s, a);
    },
    async renameAsset(s: ProviderSession, aid: string, name: string) {
      forbidIfViewer(s);
      const a = assetOf(aid);
      checkLock(s, a);
      if (nameTaken(a.parent, name, a.id)) throw hubError('asset-exists', `${name} exists`);
      a.name = name;
      return view(s, a);
    },
    async moveAsset(s: ProviderSession, aid: string, to: { parentId: string; name: string | null }) {
      forbidIfViewer(s);
      const a = assetOf(aid);
      checkLock(s, a);
      folderOf(to.parentId);
      const name = to.name ?? a.name;
      if (nameTaken(to.parentId, name, a.id)) throw hubError('asset-exists', `${name} exists`);
      a.parent = to.parentId;
      a.name = name;
      return view(s, a);
    },
    async deleteAsset(s: ProviderSession, aid: string) {
      forbidIfViewer(s);
      const a = assetOf(aid);
      checkLock(s, a);
      assets.delete(aid);
    },
    async createFolder(s: ProviderSession, parentId: string, name: string): Promise<Folder> {
      forbidIfViewer(s);
      folderOf(parentId);
      if (nameTaken(parentId, name)) throw hubError('asset-exists', `${name} exists`);
      const f = { id: randomUUID(), name, parent: parentId };
      folders.set(f.id, f);
      return { id: f.id, name: f.name };
    },
    async updateFolder(s: ProviderSession, fid: string, to: { parentId: string | null; name: string | null }): Promise<Folder> {
      forbidIfViewer(s);
      const f = folderOf(fid);
      const parent = to.parentId ?? f.parent!;
      folderOf(parent);
      const name = to.name ?? f.name;
      if (nameTaken(parent, name, f.id)) throw hubError('asset-exists', `${name} exists`);
      f.parent = parent;
      f.name = name;
      return { id: f.id, name: f.name };
    },
    async deleteFolder(s: ProviderSession, fid: string, o: { recursive: boolean }) {
      forbidIfViewer(s);
      const f = folderOf(fid);
      const inside = (p: string): string[] => [...folders.values()].filter((c) => c.parent === p).flatMap((c) => [c.id, ...inside(c.id)]);
      const all = [f.id, ...inside(f.id)];
      const content = [...assets.values()].filter((a) => all.includes(a.parent));
      if (!o.recursive && (all.length > 1 || content.length > 0)) throw hubError('folder-not-empty', `${f.name} is not empty`);
      for (const a of content) assets.delete(a.id);
      for (const x of all) folders.delete(x);
    },
    async lockAsset(s: ProviderSession, aid: string) {
      forbidIfViewer(s);
      const a = assetOf(aid);
      checkLock(s, a);
      a.lock = account(s);
      return view(s, a);
    },
    async unlockAsset(s: ProviderSession, aid: string) {
      forbidIfViewer(s);
      const a = assetOf(aid);
      checkLock(s, a);
      a.lock = null;
      return view(s, a);
    },
    accountOf: (s: ProviderSession) => account(s),
  });
  return dam;
}
