/**
 * The search engine's snapshot file (`library.sqlite.search`): the engine's arrays written as
 * they are, so that a hub restarting over a large library maps them back in a second or two
 * instead of re-tokenising every asset. A snapshot is only a cache: it names the index it was
 * made from (the index's instance id) and the change sequence it reflects; the index catches it
 * up from there, and anything unexpected (another index, a sequence from the future, a damaged
 * or truncated file, another format) means "build from the index", never an error.
 *
 * Layout: "DHSE" magic, u32 format version, u32 header length, the header (JSON: scalars,
 * dictionaries, section table), then each typed-array section at an 8-byte-aligned offset.
 */
import fs from 'node:fs';
import { ROW_STRIDE } from './documents.js';
import type { EngineState } from './engine.js';

const MAGIC = 'DHSE';
/** 2: per-document facet rows (DocumentTable.facetRows) replace the combo/kwStart/kwLen columns. */
const FORMAT = 2;

type ArrayKey = 'rowid' | 'alive' | 'dl' | 'mtime' | 'folder' | 'facetRows' | 'kwData' | 'postingLengths' | 'postingDocs' | 'postingTf';
const ARRAYS: Record<ArrayKey, new (buf: ArrayBuffer, offset: number, length: number) => ArrayBufferView & ArrayLike<number>> = {
  rowid: Int32Array, alive: Uint8Array, dl: Float32Array, mtime: Float64Array, folder: Int32Array, facetRows: Int32Array,
  kwData: Int32Array, postingLengths: Int32Array, postingDocs: Int32Array, postingTf: Uint16Array,
};

interface Header {
  instance: number;
  seq: number;
  n: number;
  live: number;
  dlSum: number;
  kwUsed: number;
  comboValues: number[][];
  dicts: EngineState['dicts'];
  termsBytes: number;
  sections: { key: ArrayKey; offset: number; length: number }[];
  termsOffset: number;
  total: number;
}

const align8 = (n: number) => (n + 7) & ~7;

/** Writes atomically (temporary file, then rename), so a reader never sees half a snapshot. */
export function writeSnapshot(file: string, state: EngineState, instance: number, seq: number): void {
  const terms = Buffer.from(state.terms.join('\0'), 'utf8');
  const header: Header = {
    instance, seq, n: state.n, live: state.live, dlSum: state.dlSum, kwUsed: state.kwUsed,
    comboValues: state.comboValues, dicts: state.dicts, termsBytes: terms.length, sections: [], termsOffset: 0, total: 0,
  };
  // Offsets are relative to the end of the header block; the header itself is sized afterwards.
  let at = 0;
  for (const key of Object.keys(ARRAYS) as ArrayKey[]) {
    const a = state[key];
    header.sections.push({ key, offset: at, length: a.length });
    at = align8(at + a.byteLength);
  }
  header.termsOffset = at;
  header.total = at + terms.length;
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const prefix = Buffer.alloc(align8(12 + json.length));
  prefix.write(MAGIC, 0, 'latin1');
  prefix.writeUInt32LE(FORMAT, 4);
  prefix.writeUInt32LE(json.length, 8);
  json.copy(prefix, 12);
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, prefix);
    let written = 0;
    for (const s of header.sections) {
      const a = state[s.key];
      if (s.offset > written) fs.writeSync(fd, Buffer.alloc(s.offset - written));
      fs.writeSync(fd, Buffer.from(a.buffer, a.byteOffset, a.byteLength));
      written = s.offset + a.byteLength;
    }
    if (header.termsOffset > written) fs.writeSync(fd, Buffer.alloc(header.termsOffset - written));
    fs.writeSync(fd, terms);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/** The snapshot's state and sequence, or null when there is none usable for this index instance. */
export function readSnapshot(file: string, instance: number, maxSeq: number): { state: EngineState; seq: number } | null {
  let buf: Buffer;
  try {
    buf = fs.readFileSync(file);
  } catch {
    return null;
  }
  try {
    if (buf.length < 12 || buf.toString('latin1', 0, 4) !== MAGIC || buf.readUInt32LE(4) !== FORMAT) return null;
    const jsonLen = buf.readUInt32LE(8);
    if (12 + jsonLen > buf.length) return null;
    const h = JSON.parse(buf.toString('utf8', 12, 12 + jsonLen)) as Header;
    const base = align8(12 + jsonLen);
    if (h.instance !== instance || !(h.seq <= maxSeq) || base + h.total !== buf.length) return null;
    // Copy once into an 8-aligned buffer that the typed arrays then view in place.
    const body = new ArrayBuffer(h.total);
    new Uint8Array(body).set(buf.subarray(base));
    const arrays = {} as Record<ArrayKey, ArrayBufferView & ArrayLike<number>>;
    for (const s of h.sections) {
      const Ctor = ARRAYS[s.key];
      if (!Ctor) return null;
      arrays[s.key] = new Ctor(body, s.offset, s.length);
    }
    const terms = h.termsBytes ? Buffer.from(body, h.termsOffset, h.termsBytes).toString('utf8').split('\0') : [];
    const state = { ...arrays, n: h.n, live: h.live, dlSum: h.dlSum, kwUsed: h.kwUsed, comboValues: h.comboValues, dicts: h.dicts, terms } as unknown as EngineState;
    if (state.rowid.length !== h.n || state.facetRows.length !== h.n * ROW_STRIDE || state.postingLengths.length !== terms.length) return null;
    let total = 0;
    for (let i = 0; i < terms.length; i++) total += state.postingLengths[i]!;
    if (total !== state.postingDocs.length) return null;
    return { state, seq: h.seq };
  } catch {
    return null;
  }
}
