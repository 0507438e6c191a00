/**
 * A scan worker (scan-pool.ts): the dot-product kernel over the index's shared memory. Each job
 * scans a slice of slots in chunks that fit this worker's own output area, and answers the
 * candidates as absolute (slot, dot) pairs in a transferred buffer.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { DIM } from './descriptor.js';
import { createKernel, scanSlots } from './kernel.js';
import type { SliceJob } from './scan-pool.js';

const { memory, queryOffset, outOffset, chunk } = workerData as { memory: WebAssembly.Memory; queryOffset: number; outOffset: number; chunk: number };
const kernel = createKernel(memory);

parentPort!.on('message', (job: SliceJob & { id: number }) => {
  try {
    new Int8Array(memory.buffer, queryOffset, DIM).set(job.query);
    const pairs = scanSlots(kernel, { q: queryOffset, base: job.base, out: outOffset, chunk }, job.from, job.to, job.floor);
    parentPort!.postMessage({ id: job.id, pairs }, [pairs.buffer as ArrayBuffer]);
  } catch (e) {
    parentPort!.postMessage({ id: job.id, error: (e as Error).message });
  }
});
