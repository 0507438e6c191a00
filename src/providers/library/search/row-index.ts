/**
 * The search engine's row id → live document number lookup (DocumentTable.find): an
 * open-addressing hash table (linear probing, at most half full) whose slots hold document
 * numbers alone; a slot's key is read from the table's row id column. Four bytes a slot, where a
 * Map of numbers took ≈ 30 per entry and every one of them on the JavaScript heap (a million
 * entries at a million assets, ten at ten); it also has no 2^24-entry limit (large-map.ts).
 *
 * Every call passes the row id column: the table grows it, and a key is `rowids[d]`.
 */
export class RowIndex {
  /** Document number + 1 per slot, 0 when empty. */
  private slots: Int32Array;
  private count = 0;

  constructor(capacity = 0) {
    this.slots = new Int32Array(slotsFor(capacity));
  }

  get size(): number {
    return this.count;
  }

  /** The document of `rowid`, if any. */
  get(rowid: number, rowids: Int32Array): number | undefined {
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let i = hash(rowid) & mask; ; i = (i + 1) & mask) {
      const v = slots[i]!;
      if (v === 0) return undefined;
      if (rowids[v - 1] === rowid) return v - 1;
    }
  }

  /** Document d is `rowids[d]`'s (a row id not in the index). */
  add(d: number, rowids: Int32Array): void {
    if ((this.count + 1) * 2 > this.slots.length) this.rehash(this.slots.length * 2, rowids);
    this.place(this.slots, d, rowids);
    this.count++;
  }

  /** `rowid` leaves the index (its document's row id is still `rowids[d]`). */
  delete(rowid: number, rowids: Int32Array): void {
    const slots = this.slots;
    const mask = slots.length - 1;
    let i = hash(rowid) & mask;
    for (; ; i = (i + 1) & mask) {
      const v = slots[i]!;
      if (v === 0) return;
      if (rowids[v - 1] === rowid) break;
    }
    // Backward-shift deletion: later entries of the probe run move up into the hole unless their
    // home slot is after it (cyclically), so that no lookup stops early at an emptied slot.
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const v = slots[j]!;
      if (v === 0) break;
      const home = hash(rowids[v - 1]!) & mask;
      if (i <= j ? i < home && home <= j : i < home || home <= j) continue;
      slots[i] = v;
      i = j;
    }
    slots[i] = 0;
    this.count--;
  }

  private place(slots: Int32Array, d: number, rowids: Int32Array): void {
    const mask = slots.length - 1;
    let i = hash(rowids[d]!) & mask;
    while (slots[i] !== 0) i = (i + 1) & mask;
    slots[i] = d + 1;
  }

  private rehash(size: number, rowids: Int32Array): void {
    const slots = new Int32Array(size);
    for (const v of this.slots) if (v !== 0) this.place(slots, v - 1, rowids);
    this.slots = slots;
  }
}

/** Row ids are often consecutive: a multiplicative hash spreads them over the slots' low bits. */
function hash(rowid: number): number {
  const h = Math.imul(rowid, 0x9e3779b1);
  return h ^ (h >>> 16);
}

/** A power of two at least twice `entries` (and 1,024). */
function slotsFor(entries: number): number {
  let size = 1024;
  while (size < entries * 2) size *= 2;
  return size;
}
