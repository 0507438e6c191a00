/**
 * The hot loop of search by image: int8 dot products of one query against every stored vector,
 * as a WebAssembly SIMD kernel (Node ≥ 16.4 always has wasm SIMD). Plain JavaScript manages ~0.7
 * multiply-adds per ns on this loop (85 ms for 1M × 64); the SIMD kernel does 16 per iteration and
 * scans 1M × 64 in ~13 ms on one idle core, which is what makes an exact scan fit the 50 ms budget.
 *
 * The module is tiny, so it is assembled here from its bytes rather than built by a toolchain.
 * It is specialised for 64-byte vectors (descriptor.ts DIM): the query is widened to i16 once and
 * kept in eight v128 locals, so each stored vector costs 4 loads, 8 widenings, 8 i32x4.dot_i16x8_s
 * and a lane sum; only vectors at or above a floor are reported, so the JavaScript that ranks them
 * touches the few candidates rather than a million scores. Text form (WAT) of the one exported function:
 *
 *   (func (export "dots") (param $q i32) (param $base i32) (param $n i32) (param $out i32) (param $floor i32) (result i32)
 *     (local $i i32) (local $p i32) (local $count i32) (local $sum i32) (local $q0l v128) (local $q0h v128) ... (local $q3h v128)
 *     (local $acc v128) (local $a v128)
 *     ;; for c in 0..3: $qcl/$qch = i16x8.extend_low/high_i8x16_s (v128.load offset=16c (local.get $q))
 *     (local.set $p (local.get $base))
 *     (block (loop
 *       (br_if 1 (i32.ge_u (local.get $i) (local.get $n)))
 *       ;; acc = Σc dot(extend_low(load p+16c), $qcl) + dot(extend_high(load p+16c), $qch)
 *       (if (i32.ge_s (local.tee $sum (sum of the four i32x4 lanes of $acc)) (local.get $floor))
 *         (then (i32.store (out + 8·count) (local.get $i)) (i32.store offset=4 (out + 8·count) (local.get $sum))
 *               (local.set $count (i32.add (local.get $count) (i32.const 1)))))
 *       (local.set $p (i32.add (local.get $p) (i32.const 64)))
 *       (local.set $i (i32.add (local.get $i) (i32.const 1)))
 *       (br 0)))
 *     (local.get $count))
 *   (memory (export "mem") 1)
 */

/** Body of dots64: DIM = 64 (4 chunks) specialised, the query widened to i16 once, in locals. */
function body(): number[] {
  // params: 0 q, 1 base, 2 n, 3 out, 4 floor
  const I = 5, P = 6, C = 7, S = 8; // i32 locals: i, p, count, sum
  const Q = 9; // v128 locals 9..16: query chunks c as (low, high) i16x8 halves
  const ACC = 17, A = 18;
  const out: number[] = [0x02, 0x04, 0x7f, 0x0a, 0x7b]; // locals: 4 × i32, 10 × v128
  for (let c = 0; c < 4; c++) {
    out.push(0x20, 0x00, 0xfd, 0x00, 0x00, c * 16, 0x22, A); // a = load q + 16c
    out.push(0xfd, 0x87, 0x01, 0x21, Q + 2 * c); // qLow_c = extend_low(a)
    out.push(0x20, A, 0xfd, 0x88, 0x01, 0x21, Q + 2 * c + 1); // qHigh_c = extend_high(a)
  }
  out.push(0x20, 0x01, 0x21, P); // p = base
  out.push(0x02, 0x40, 0x03, 0x40); // block, loop
  out.push(0x20, I, 0x20, 0x02, 0x4f, 0x0d, 0x01); // if i >= n break
  for (let c = 0; c < 4; c++) {
    out.push(0x20, P, 0xfd, 0x00, 0x00, c * 16, 0x21, A); // a = load p + 16c
    out.push(0x20, A, 0xfd, 0x87, 0x01, 0x20, Q + 2 * c, 0xfd, 0xba, 0x01); // dot(extend_low(a), qLow_c)
    if (c > 0) out.push(0xfd, 0xae, 0x01); // acc +=
    out.push(0x20, A, 0xfd, 0x88, 0x01, 0x20, Q + 2 * c + 1, 0xfd, 0xba, 0x01, 0xfd, 0xae, 0x01); // += dot(extend_high(a), qHigh_c)
  }
  out.push(0x21, ACC);
  out.push(0x20, ACC, 0xfd, 0x1b, 0x00);
  for (let lane = 1; lane < 4; lane++) out.push(0x20, ACC, 0xfd, 0x1b, lane, 0x6a);
  out.push(0x22, S, 0x20, 0x04, 0x4e, 0x04, 0x40); // if (sum = lane sum) >= floor
  out.push(0x20, 0x03, 0x20, C, 0x41, 0x03, 0x74, 0x6a, 0x20, I, 0x36, 0x02, 0x00); // out[2·count] = i
  out.push(0x20, 0x03, 0x20, C, 0x41, 0x03, 0x74, 0x6a, 0x20, S, 0x36, 0x02, 0x04); // out[2·count + 1] = sum
  out.push(0x20, C, 0x41, 0x01, 0x6a, 0x21, C); // count++
  out.push(0x0b); // end if
  out.push(0x20, P, 0x41, 0xc0, 0x00, 0x6a, 0x21, P); // p += 64
  out.push(0x20, I, 0x41, 0x01, 0x6a, 0x21, I); // i++
  out.push(0x0c, 0x00, 0x0b, 0x0b); // continue; end loop, block
  out.push(0x20, C, 0x0b); // return count; end function
  return out;
}
const BODY = body();

function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

const section = (id: number, content: number[]) => [id, ...leb(content.length), ...content];

/** Largest memory a kernel may grow to: 4 GiB, 65,536 pages (wasm32), about 59 million vectors. */
export const MAX_PAGES = 65536;

/**
 * The module imports its memory (`env.mem`, shared): the index and every scan worker
 * (scan-pool.ts) instantiate it over the same SharedArrayBuffer-backed memory, so the vectors are
 * written once and scanned by any thread.
 */
const MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  ...section(1, [0x01, 0x60, 0x05, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f]), // type: (i32 ×5) → i32
  // import env.mem: memory, shared with a maximum (limits flag 3), min 1 page, max MAX_PAGES
  ...section(2, [0x01, 0x03, 0x65, 0x6e, 0x76, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x03, 0x01, ...leb(MAX_PAGES)]),
  ...section(3, [0x01, 0x00]), // one function of type 0
  ...section(7, [0x01, 0x04, 0x64, 0x6f, 0x74, 0x73, 0x00, 0x00]), // export dots
  ...section(10, [0x01, ...leb(BODY.length), ...BODY]),
]);

let compiled: WebAssembly.Module | null = null;

export interface DotKernel {
  /** The kernel's linear memory (shared); views must be re-created after grow(). */
  readonly memory: WebAssembly.Memory;
  /**
   * For each i < n, dot = Σ q[j]·base[64·i + j] (j < 64); every i with dot ≥ floor is written to
   * out as the int32 pair (i, dot). Returns the number of pairs. Offsets are bytes into memory.
   */
  dots(q: number, base: number, n: number, out: number, floor: number): number;
}

/** A shared memory for one index's kernel and its scan workers. */
export function sharedKernelMemory(pages = 1): WebAssembly.Memory {
  return new WebAssembly.Memory({ initial: pages, maximum: MAX_PAGES, shared: true });
}

/** A kernel over `memory` (a fresh shared one when not given: one per index, or a worker's view of an index's). */
export function createKernel(memory: WebAssembly.Memory = sharedKernelMemory()): DotKernel {
  compiled ??= new WebAssembly.Module(MODULE);
  const instance = new WebAssembly.Instance(compiled, { env: { mem: memory } });
  const ex = instance.exports as unknown as { dots: DotKernel['dots'] };
  return { memory, dots: ex.dots };
}

/**
 * The candidates of slots [from, to): the kernel run `chunk` slots at a time into the output area
 * at `out` (which holds `chunk` pairs), each chunk's pairs copied out with absolute slot numbers.
 * The query is at `q`; slot 0's vector at `base`. Returns (slot, dot) int32 pairs.
 */
export function scanSlots(kernel: DotKernel, at: { q: number; base: number; out: number; chunk: number }, from: number, to: number, floor: number): Int32Array {
  const parts: Int32Array[] = [];
  let total = 0;
  for (let start = from; start < to; start += at.chunk) {
    const found = kernel.dots(at.q, at.base + start * 64, Math.min(at.chunk, to - start), at.out, floor);
    const out = new Int32Array(kernel.memory.buffer, at.out, found * 2);
    const part = new Int32Array(found * 2);
    for (let c = 0; c < found; c++) {
      part[2 * c] = out[2 * c]! + start;
      part[2 * c + 1] = out[2 * c + 1]!;
    }
    parts.push(part);
    total += found;
  }
  if (parts.length === 1) return parts[0]!;
  const pairs = new Int32Array(total * 2);
  let offset = 0;
  for (const p of parts) {
    pairs.set(p, offset);
    offset += p.length;
  }
  return pairs;
}
