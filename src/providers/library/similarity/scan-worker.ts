/**
 * A scan worker (scan-pool.ts): the dot-product kernel over the index's shared memory. Each job
 * scans a slice of slots in chunks that fit this worker's own output area, and answers the
 * candidates as absolute (slot, dot) pairs in a transferred buffer.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { DIM } from './descriptor.js';
import { createKernel } from './kernel.js';
import type { SliceJob } from './scan-pool.js';

const { memory, queryOffset, outOffset, chunk } = workerData as { memory: WebAssembly.Memory; queryOffset: number; outOffset: number; chunk: number };
const kernel = createKernel(memory);

parentPort!.on('message', (job: SliceJob & { id: number }) => {
  try {
    new Int8Array(memory.buffer, queryOffset, DIM).set(job.query);
    const parts: Int32Array[] = [];
    let total = 0;
    for (let start = job.from; start < job.to; start += chunk) {
      const len = Math.min(chunk, job.to - start);
      const found = kernel.dots(queryOffset, job.base + start * DIM, len, outOffset, job.floor);
      const out = new Int32Array(memory.buffer, outOffset, found * 2);
      const part = new Int32Array(found * 2);
      for (let c = 0; c < found; c++) {
        part[2 * c] = out[2 * c]! + start;
        part[2 * c + 1] = out[2 * c + 1]!;
      }
      parts.push(part);
      total += found;
    }
    const pairs = parts.length === 1 ? parts[0]! : new Int32Array(total * 2);
    if (parts.length !== 1) {
      let at = 0;
      for (const p of parts) {
        pairs.set(p, at);
        at += p.length;
      }
    }
    parentPort!.postMessage({ id: job.id, pairs }, [pairs.buffer as ArrayBuffer]);
  } catch (e) {
    parentPort!.postMessage({ id: job.id, error: (e as Error).message });
  }
});
