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
 * Loading reads the file into one buffer that the engine's arrays then view.
 */
import fs from 'node:fs';
import { ROW_STRIDE } from './documents.js';
import type { EngineExport, EngineState } from './engine.js';
import { TermDictionary } from './terms.js';

const MAGIC = 'DHSE';
/**
 * 2: per-document facet rows (DocumentTable.facetRows) replace the combo/kwStart/kwLen columns.
 * 3: the term dictionary's columns (terms.ts) replace the terms as strings and one list per term.
 * 4: terms of 2 to SMALL_MAX postings in the dictionary's small-list arena.
 */
const FORMAT = 4;

type ArrayKey = 'rowid' | 'alive' | 'dl' | 'mtime' | 'folder' | 'facetRows' | 'kwData'
  | 'termChars' | 'termEnds' | 'termOrder' | 'termFirst' | 'termFirstTf' | 'termSlots' | 'termSmallN' | 'smallDocs' | 'smallTf'
  | 'listLengths' | 'listDocs' | 'listTf';
type Section = ArrayBufferView & ArrayLike<number>;
const ARRAYS: Record<ArrayKey, new (buf: ArrayBuffer, offset: number, length: number) => Section> = {
  rowid: Int32Array, alive: Uint8Array, dl: Float32Array, mtime: Float64Array, folder: Int32Array, facetRows: Int32Array, kwData: Int32Array,
  termChars: Uint16Array, termEnds: Int32Array, termOrder: Int32Array, termFirst: Int32Array, termFirstTf: Uint16Array, termSlots: Int32Array,
  termSmallN: Uint8Array, smallDocs: Int32Array, smallTf: Uint16Array, listLengths: Int32Array, listDocs: Int32Array, listTf: Uint16Array,
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
  sections: { key: ArrayKey; offset: number; length: number }[];
  total: number;
}

const align8 = (n: number) => (n + 7) & ~7;

/** A section's chunks: most are one array, the posting lists one per list (TermExport). */
function chunksOf(state: EngineExport, key: ArrayKey): Iterable<Section> {
  const v = state[key] as Section | Iterable<Section>;
  return ArrayBuffer.isView(v) ? [v] : v;
}

/**
 * Writes atomically (temporary file, then rename), so a reader never sees half a snapshot. The
 * arrays are written from where they are, chunk by chunk: no copy of the engine is made.
 */
export function writeSnapshot(file: string, state: EngineExport, instance: number, seq: number): void {
  const header: Header = {
    instance, seq, n: state.n, live: state.live, dlSum: state.dlSum, kwUsed: state.kwUsed,
    comboValues: state.comboValues, dicts: state.dicts, sections: [], total: 0,
  };
  // Offsets are relative to the end of the header block; the header itself is sized afterwards.
  let at = 0;
  for (const key of Object.keys(ARRAYS) as ArrayKey[]) {
    let length = 0;
    let bytes = 0;
    for (const c of chunksOf(state, key)) {
      length += c.length;
      bytes += c.byteLength;
    }
    header.sections.push({ key, offset: at, length });
    at = align8(at + bytes);
  }
  header.total = at;
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const prefix = Buffer.alloc(align8(12 + json.length));
  prefix.write(MAGIC, 0, 'latin1');
  prefix.writeUInt32LE(FORMAT, 4);
  prefix.writeUInt32LE(json.length, 8);
  json.copy(prefix, 12);
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    const out = new Writer(fd);
    out.write(prefix);
    let written = 0;
    for (const s of header.sections) {
      out.zeros(s.offset - written);
      written = s.offset;
      for (const c of chunksOf(state, s.key)) {
        out.write(new Uint8Array(c.buffer, c.byteOffset, c.byteLength));
        written += c.byteLength;
      }
    }
    out.zeros(header.total - written);
    out.flush();
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/** Writes through a 1 MiB buffer: a library's lists are millions of small chunks, each a system call otherwise. */
class Writer {
  private readonly buf = Buffer.alloc(1 << 20);
  private used = 0;

  constructor(private readonly fd: number) {}

  write(bytes: Uint8Array): void {
    if (this.used + bytes.length > this.buf.length) this.flush();
    if (bytes.length >= this.buf.length) writeAll(this.fd, bytes);
    else {
      this.buf.set(bytes, this.used);
      this.used += bytes.length;
    }
  }

  zeros(count: number): void {
    if (count > 0) this.write(new Uint8Array(count));
  }

  flush(): void {
    writeAll(this.fd, this.buf.subarray(0, this.used));
    this.used = 0;
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.length; ) at += fs.writeSync(fd, bytes, at, bytes.length - at);
}

/** The snapshot's state and sequence, or null when there is none usable for this index instance. */
export function readSnapshot(file: string, instance: number, maxSeq: number): { state: EngineState; seq: number } | null {
  let buf: ArrayBuffer;
  try {
    buf = readWhole(file);
  } catch {
    return null;
  }
  try {
    const size = buf.byteLength;
    if (size < 12) return null;
    const start = Buffer.from(buf, 0, 12);
    if (start.toString('latin1', 0, 4) !== MAGIC || start.readUInt32LE(4) !== FORMAT) return null;
    const jsonLen = start.readUInt32LE(8);
    if (12 + jsonLen > size) return null;
    const h = JSON.parse(Buffer.from(buf, 12, jsonLen).toString('utf8')) as Header;
    const base = align8(12 + jsonLen);
    if (h.instance !== instance || !(h.seq <= maxSeq) || base + h.total !== size) return null;
    // The file was read into one ArrayBuffer and every section starts 8-aligned: the typed arrays view it in place.
    const arrays = {} as Record<ArrayKey, Section>;
    for (const s of h.sections) {
      const Ctor = ARRAYS[s.key];
      if (!Ctor) return null;
      arrays[s.key] = new Ctor(buf, base + s.offset, s.length);
    }
    if (Object.keys(ARRAYS).some((k) => !arrays[k as ArrayKey])) return null;
    const state = { ...arrays, n: h.n, live: h.live, dlSum: h.dlSum, kwUsed: h.kwUsed, comboValues: h.comboValues, dicts: h.dicts } as unknown as EngineState;
    if (state.rowid.length !== h.n || state.facetRows.length !== h.n * ROW_STRIDE || !TermDictionary.validState(state)) return null;
    return { state, seq: h.seq };
  } catch {
    return null;
  }
}

/**
 * A file's bytes in one ArrayBuffer of its own: no second copy, and no 2 GiB limit
 * (fs.readFileSync's; a snapshot at ten million assets is about that size).
 */
function readWhole(file: string): ArrayBuffer {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const buf = new ArrayBuffer(size);
    const view = new Uint8Array(buf);
    for (let at = 0; at < size; ) {
      const n = fs.readSync(fd, view, at, Math.min(size - at, 1 << 30), at);
      if (n === 0) throw new Error('snapshot: short read');
      at += n;
    }
    return buf;
  } finally {
    fs.closeSync(fd);
  }
}
