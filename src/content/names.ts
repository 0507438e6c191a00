/**
 * Names of new and renamed assets and folders, checked once, here, for every backend (docs/writes.md
 * "Names"): what one DAM forbids is refused for all, so a name that works in one library works in
 * every other, and no path trick (`..`, a separator) ever reaches a connector.
 */
import { hubError } from '../errors.js';
import { MAX_NAME_BYTES } from '../providers/names.js';

export { MAX_NAME_BYTES };


/**
 * Windows' reserved device names (with or without an extension): SMB- and OneDrive-backed
 * libraries refuse them, so damhub refuses them everywhere.
 */
const RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\.|$)/i;
/** Characters Windows-backed DAMs (SharePoint, OneDrive, SMB shares) refuse in names. */
const FORBIDDEN_CHARS = /[<>:"|?*]/;

/** The rule a refused name broke, as the error names it. */
export type NameRule = 'empty' | 'separator' | 'nul' | 'control' | 'dot' | 'length' | 'character' | 'reserved' | 'trailing' | 'hidden-temp';

function refuse(rule: NameRule, what: string, detail: string): never {
  throw hubError('asset-name-invalid', `${what} ${detail} (rule: ${rule})`);
}

/**
 * The name in NFC, or 400 asset-name-invalid naming the rule. `what` says which name it was
 * ("name", "folder name") for the message.
 */
export function checkName(raw: string, what = 'name'): string {
  const name = raw.normalize('NFC');
  if (name.length === 0) refuse('empty', what, 'is empty');
  if (name.includes('\0')) refuse('nul', what, 'contains a NUL character');
  if (name.includes('/') || name.includes('\\')) refuse('separator', what, `${JSON.stringify(name)} contains a path separator (/ or \\)`);
  // C0, DEL and C1 controls: invisible, and refused by several DAMs and filesystems.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) refuse('control', what, `${JSON.stringify(name)} contains a control character`);
  if (name === '.' || name === '..') refuse('dot', what, `cannot be ${JSON.stringify(name)}`);
  if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) refuse('length', what, `is ${Buffer.byteLength(name, 'utf8')} bytes long in UTF-8; at most ${MAX_NAME_BYTES}`);
  if (FORBIDDEN_CHARS.test(name)) refuse('character', what, `${JSON.stringify(name)} contains one of < > : " | ? *`);
  if (RESERVED.test(name)) refuse('reserved', what, `${JSON.stringify(name)} is a reserved device name`);
  if (/[ .]$/.test(name) || /^\s/.test(name)) refuse('trailing', what, `${JSON.stringify(name)} starts with a space or ends with a space or a dot`);
  // The temporary names of uploads in progress (the library's and WebDAV's) are the hub's own.
  if (name.startsWith('.damhub-')) refuse('hidden-temp', what, `${JSON.stringify(name)} starts with .damhub-, kept for uploads in progress`);
  return name;
}
