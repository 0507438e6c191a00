/**
 * The hot loop of search by image: int8 dot products of one query against every stored vector,
 * as a WebAssembly SIMD kernel (Node ≥ 16.4 always has wasm SIMD). Plain JavaScript manages ~0.7
 * multiply-adds per ns on this loop (85 ms for 1M × 64); the SIMD kernel does 16 per iteration and
 * scans 1M × 64 in ~19 ms on one core, which is what makes an exact scan fit the 50 ms budget.
 *
 * The module is tiny, so it is assembled here from its bytes rather than built by a toolchain.
 * Text form (WAT) of the one exported function:
 *
 *   (func (export "dots") (param $q i32) (param $base i32) (param $n i32) (param $chunks i32) (param $out i32)
 *     (local $i i32) (local $c i32) (local $p i32) (local $qp i32) (local $acc v128) (local $a v128) (local $b v128)
 *     (local.set $p (local.get $base))
 *     (block (loop
 *       (br_if 1 (i32.ge_u (local.get $i) (local.get $n)))
 *       (local.set $acc (v128.const i32x4 0 0 0 0)) (local.set $qp (local.get $q)) (local.set $c (i32.const 0))
 *       (loop                                    ;; 16 bytes per iteration
 *         (local.set $a (v128.load (local.get $p))) (local.set $b (v128.load (local.get $qp)))
 *         (local.set $acc (i32x4.add (i32x4.add (local.get $acc)
 *             (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $a)) (i16x8.extend_low_i8x16_s (local.get $b))))
 *             (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $a)) (i16x8.extend_high_i8x16_s (local.get $b)))))
 *         (local.set $p (i32.add (local.get $p) (i32.const 16))) (local.set $qp (i32.add (local.get $qp) (i32.const 16)))
 *         (br_if 0 (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (local.get $chunks))))
 *       (i32.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2)))
 *         (sum of the four i32x4 lanes of $acc))
 *       (local.set $i (i32.add (local.get $i) (i32.const 1)))
 *       (br 0)))
 *   (memory (export "mem") 1)
 */

const BODY = [
  0x02, 0x04, 0x7f, 0x03, 0x7b, // locals: 4 × i32, 3 × v128
  0x20, 0x01, 0x21, 0x07, // p = base
  0x02, 0x40, 0x03, 0x40, // block, loop
  0x20, 0x05, 0x20, 0x02, 0x4f, 0x0d, 0x01, // if i >= n break
  0xfd, 0x0c, ...new Array<number>(16).fill(0), 0x21, 0x09, // acc = 0
  0x20, 0x00, 0x21, 0x08, // qp = q
  0x41, 0x00, 0x21, 0x06, // c = 0
  0x03, 0x40, // loop over 16-byte chunks
  0x20, 0x07, 0xfd, 0x00, 0x00, 0x00, 0x21, 0x0a, // a = load p
  0x20, 0x08, 0xfd, 0x00, 0x00, 0x00, 0x21, 0x0b, // b = load qp
  0x20, 0x09,
  0x20, 0x0a, 0xfd, 0x87, 0x01, 0x20, 0x0b, 0xfd, 0x87, 0x01, 0xfd, 0xba, 0x01, 0xfd, 0xae, 0x01, // acc += dot(low halves)
  0x20, 0x0a, 0xfd, 0x88, 0x01, 0x20, 0x0b, 0xfd, 0x88, 0x01, 0xfd, 0xba, 0x01, 0xfd, 0xae, 0x01, // acc += dot(high halves)
  0x21, 0x09,
  0x20, 0x07, 0x41, 0x10, 0x6a, 0x21, 0x07, // p += 16
  0x20, 0x08, 0x41, 0x10, 0x6a, 0x21, 0x08, // qp += 16
  0x20, 0x06, 0x41, 0x01, 0x6a, 0x22, 0x06, // ++c
  0x20, 0x03, 0x49, 0x0d, 0x00, // while c < chunks
  0x0b,
  0x20, 0x04, 0x20, 0x05, 0x41, 0x02, 0x74, 0x6a, // &out[i]
  0x20, 0x09, 0xfd, 0x1b, 0x00,
  0x20, 0x09, 0xfd, 0x1b, 0x01, 0x6a,
  0x20, 0x09, 0xfd, 0x1b, 0x02, 0x6a,
  0x20, 0x09, 0xfd, 0x1b, 0x03, 0x6a,
  0x36, 0x02, 0x00, // out[i] = lane sum
  0x20, 0x05, 0x41, 0x01, 0x6a, 0x21, 0x05, // i++
  0x0c, 0x00, // continue
  0x0b, 0x0b, 0x0b,
];

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

const MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  ...section(1, [0x01, 0x60, 0x05, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x00]), // type: (i32 ×5) → ()
  ...section(3, [0x01, 0x00]), // one function of type 0
  ...section(5, [0x01, 0x00, 0x01]), // memory, min 1 page
  ...section(7, [0x02, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00, 0x04, 0x64, 0x6f, 0x74, 0x73, 0x00, 0x00]), // exports mem, dots
  ...section(10, [0x01, ...leb(BODY.length), ...BODY]),
]);

export interface DotKernel {
  /** The kernel's linear memory; views must be re-created after grow(). */
  readonly memory: WebAssembly.Memory;
  /** out[i] = Σ q[j]·base[i·16·chunks + j] for i < n (byte offsets into memory; out is int32). */
  dots(q: number, base: number, n: number, chunks: number, out: number): void;
}

/** A fresh kernel instance with its own memory (one per index). */
export function createKernel(): DotKernel {
  const instance = new WebAssembly.Instance(new WebAssembly.Module(MODULE));
  const ex = instance.exports as unknown as { mem: WebAssembly.Memory; dots: DotKernel['dots'] };
  return { memory: ex.mem, dots: ex.dots };
}
