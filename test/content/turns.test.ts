/**
 * Turns (src/content/turns.ts): heavy page assembly one job per event-loop turn, in arrival order.
 * A loop-iteration counter (a setImmediate that re-queues itself runs once per iteration) tells
 * whether two jobs ran in the same turn of the loop.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Turns } from '../../src/content/turns.js';

function iterationCounter(): { now(): number; stop(): void } {
  let n = 0;
  let running = true;
  // Unref'd: a test that fails before stop() must not leave the chain holding the process open.
  const tick = () => {
    n++;
    if (running) setImmediate(tick).unref();
  };
  setImmediate(tick).unref();
  return { now: () => n, stop: () => { running = false; } };
}

test('jobs start in arrival order, one per turn of the event loop', async () => {
  const turns = new Turns();
  const loop = iterationCounter();
  const started: { job: number; iteration: number }[] = [];
  await Promise.all(Array.from({ length: 6 }, async (_, job) => {
    await turns.turn();
    started.push({ job, iteration: loop.now() });
  }));
  loop.stop();
  assert.deepEqual(started.map((s) => s.job), [0, 1, 2, 3, 4, 5], 'first come, first served');
  const iterations = started.map((s) => s.iteration);
  assert.equal(new Set(iterations).size, 6, `each job in a turn of its own (iterations ${iterations.join(', ')})`);
  assert.equal(turns.pending, 0);
});

test('a job that arrives while others wait queues behind them', async () => {
  const turns = new Turns();
  const order: string[] = [];
  const first = turns.turn().then(() => {
    order.push('a');
    // Arrives during a's turn: b and c were already waiting.
    return turns.turn().then(() => { order.push('d'); });
  });
  const rest = [turns.turn().then(() => { order.push('b'); }), turns.turn().then(() => { order.push('c'); })];
  assert.equal(turns.pending, 3);
  await Promise.all([first, ...rest]);
  assert.deepEqual(order, ['a', 'b', 'c', 'd']);
});

test('a long queue drains completely and stays usable', async () => {
  const turns = new Turns();
  let done = 0;
  await Promise.all(Array.from({ length: 3000 }, () => turns.turn().then(() => { done++; })));
  assert.equal(done, 3000);
  assert.equal(turns.pending, 0);
  await turns.turn();
  assert.equal(turns.pending, 0);
});

test('a caller whose client went away while it waited is refused with the reason and takes no turn', async () => {
  const turns = new Turns();
  const loop = iterationCounter();
  const left = new AbortController();
  const started: { job: string; iteration: number }[] = [];
  const run = (job: string, signal?: AbortSignal) => turns.turn(signal).then(() => { started.push({ job, iteration: loop.now() }); });
  const a = run('a');
  const gone = run('gone', left.signal);
  const b = run('b');
  left.abort(new Error('the client closed the connection'));
  await Promise.all([a, b]);
  await assert.rejects(gone, /the client closed the connection/);
  // An already-fired signal is refused at once.
  await assert.rejects(turns.turn(left.signal), /the client closed the connection/);
  loop.stop();
  assert.deepEqual(started.map((s) => s.job), ['a', 'b']);
  assert.equal(started[1]!.iteration - started[0]!.iteration, 1, 'b starts in the turn right after a: the refused caller took none');
  assert.equal(turns.pending, 0);
});
