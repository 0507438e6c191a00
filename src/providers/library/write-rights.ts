/**
 * Who may write where in the embedded library: an account writes in its write folders
 * (`damhub users add NAME --write-folders "A,B/C"`, none by default) and below them, and only
 * where it can see (its `folders`). An operation that changes what a folder holds needs the right
 * on that folder: an upload, a new folder or a rename in F needs F; a move needs the folder it
 * leaves and the one it enters; renaming or deleting the folder F/X needs F, so an account may
 * never remove or rename the folder it was given, only what is inside it.
 */
import { integrationError } from '../../errors.js';
import type { Asset, FolderCapabilities } from '../model.js';
import type { AccountRow } from './index/contract.js';
import { isWithin } from './paths.js';
import { parentOf } from './scanner.js';

const LIBRARY_ID = 'library';

/** Whether the account sees `folder` ('' is the root). */
export function canSee(acc: AccountRow, folder: string): boolean {
  return !acc.folders.length || acc.folders.some((r) => isWithin(folder, r));
}

/** Whether the account may change what `folder` holds. */
export function canWrite(acc: AccountRow, folder: string): boolean {
  return canSee(acc, folder) && acc.writeFolders.some((w) => isWithin(folder, w));
}

/** Refuses (403 integration-forbidden naming the folder) unless the account may write in `folder`. */
export function requireWrite(acc: AccountRow, folder: string): void {
  if (!canWrite(acc, folder)) {
    throw integrationError('integration-forbidden', LIBRARY_ID, `the account ${acc.name} may not write in ${folder === '' ? 'the library root' : `/${folder}`}`);
  }
}

/** What the account may do with an asset of `folder` (the provider's statement; the hub ANDs it with the rest). */
export function assetPermissions(acc: AccountRow, folder: string): NonNullable<Asset['capabilities']> {
  const w = canWrite(acc, folder);
  return { canDeleteAsset: w, canUpdateAsset: w, canLockAsset: w, canUnlockAsset: w, canRenameAsset: w, uploadExtensions: [] };
}

/** What the account may do in `folder` ('' the root): add into it, and rename or delete it (in its parent). */
export function folderPermissions(acc: AccountRow, folder: string): Omit<FolderCapabilities, 'uploadExtensions'> {
  const inside = canWrite(acc, folder);
  const itself = folder !== '' && canWrite(acc, parentOf(folder));
  return { canAddAsset: inside, canAddFolder: inside, canRenameFolder: itself, canDeleteFolder: itself };
}
