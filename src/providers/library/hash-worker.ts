/**
 * One hashing lane (hash-lanes.ts): keeps a DigestSet per stream it is fed, over the bytes the
 * main thread shares with it (SharedArrayBuffer, never copied), and acknowledges every chunk so
 * its shared slot can be lent again.
 */
import { parentPort } from 'node:worker_threads';
import { DigestSet, type DigestPart } from './hashes.js';

export type LaneRequest =
  | { op: 'start'; id: number; parts: DigestPart[] }
  | { op: 'data'; id: number; bytes: Uint8Array; slot: number | null }
  | { op: 'end'; id: number }
  | { op: 'drop'; id: number };

export type LaneAnswer =
  | { op: 'ack'; id: number; slot: number | null }
  | { op: 'result'; id: number; hashes: ReturnType<DigestSet['result']> };

const sets = new Map<number, DigestSet>();
const port = parentPort!;

port.on('message', (m: LaneRequest) => {
  if (m.op === 'start') sets.set(m.id, new DigestSet(m.parts));
  else if (m.op === 'data') {
    sets.get(m.id)?.update(m.bytes);
    port.postMessage({ op: 'ack', id: m.id, slot: m.slot } satisfies LaneAnswer);
  } else if (m.op === 'end') {
    const set = sets.get(m.id);
    sets.delete(m.id);
    if (set) port.postMessage({ op: 'result', id: m.id, hashes: set.result() } satisfies LaneAnswer);
  } else sets.delete(m.id);
});
