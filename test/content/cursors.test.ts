/**
 * Sealed paging cursors (src/content/cursors.ts): confidential as well as authenticated. What a
 * provider puts in its cursor (the library's row ids and ranking statistics) must not be readable
 * in `more`, and every wrong `more` (altered, forged, another user's or query's, stale, under a
 * retired key, re-spelt) is a 400 hub-validation-error saying what is wrong. Manual clock only.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyRing, rotatedKeys } from '../../src/auth/keys.js';
import { ManualClock } from '../../src/clock.js';
import { CURSOR_TTL_MS, CursorSealer } from '../../src/content/cursors.js';
import { isHubError } from '../../src/errors.js';
import { padded, unusedBitsSet } from '../helpers/respell.js';

const T0 = Date.UTC(2026, 5, 1, 12);
const DAY = 24 * 3600_000;
/** A keyword-search cursor of the library provider: sort key, row id, idf per word, average length. */
const LIBRARY_CURSOR = JSON.stringify({ k: 3.5849625007211565, r: 918273, p: { idf: [2.718281828459045, 0.6931471805599453], avgdl: 41.25 } });
const BINDING = CursorSealer.binding(['user-1', 'library', 'search', 'harbour', null, [], null]);

function setup() {
  const clock = new ManualClock(T0);
  const ring = KeyRing.generate(T0);
  return { clock, ring, sealer: new CursorSealer(ring, clock) };
}

function refused(f: () => unknown, details: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(isHubError(e), `a HubError, not ${String(e)}`);
    assert.equal(e.code, 'hub-validation-error');
    assert.equal(e.status, 400);
    assert.match(e.details ?? '', details);
    return true;
  });
}

/** Every way a client could try to read `more`: the whole text and each dot-separated part, as base64url, base64, UTF-8 and Latin-1. */
function decodings(more: string): string[] {
  const out = [more];
  for (const part of [more, ...more.split('.')]) {
    for (const enc of ['base64url', 'base64'] as const) {
      const bytes = Buffer.from(part, enc);
      // Latin-1 maps every byte to one character: plain text anywhere in the bytes shows in it.
      out.push(bytes.toString('utf8'), bytes.toString('latin1'));
    }
  }
  return out;
}

describe('sealed cursors', () => {
  test('a cursor is not readable: no JSON, no row id, no ranking statistic in any decoding of it', () => {
    const { sealer } = setup();
    const more = sealer.seal(LIBRARY_CURSOR, BINDING);
    // Needles of four characters or more: shorter ones turn up in random bytes by chance.
    const secrets = ['{"k"', '"k":', '918273', '"idf"', 'avgdl', '2.718', '0.6931', '41.25', '3.5849', BINDING];
    for (const text of decodings(more)) for (const s of secrets) assert.ok(!text.includes(s), `${JSON.stringify(s)} readable in a decoding of ${more}`);
    // Two seals of the same cursor differ (a fresh nonce each): equal pages are not even linkable.
    assert.notEqual(sealer.seal(LIBRARY_CURSOR, BINDING), more);
    assert.equal(sealer.unseal(more, BINDING), LIBRARY_CURSOR);
  });

  test('an altered cursor (any character, truncated, extended, kid swapped) → 400 "altered"', () => {
    const { sealer, ring } = setup();
    const more = sealer.seal(LIBRARY_CURSOR, BINDING);
    const [kid, blob] = more.split('.') as [string, string];
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let i = 0; i < blob.length - 1; i++) {
      const c = ALPHABET[(ALPHABET.indexOf(blob[i]!) + 1) % 64]!;
      refused(() => sealer.unseal(`${kid}.${blob.slice(0, i)}${c}${blob.slice(i + 1)}`, BINDING), /altered or not issued by this hub/);
    }
    refused(() => sealer.unseal(`${kid}.${blob.slice(0, -4)}`, BINDING), /altered|not a cursor/);
    refused(() => sealer.unseal(`${kid}.${blob}AAAA`, BINDING), /altered/);
    // The same bytes under another kid of the ring (the signing key's) is not a cursor key.
    refused(() => sealer.unseal(`${ring.active('sig').kid}.${blob}`, BINDING), /retired key/);
  });

  test('a re-spelt cursor (padding, a flipped unused bit) → 400, not a second spelling of the same cursor', () => {
    const { sealer } = setup();
    const more = sealer.seal(LIBRARY_CURSOR, BINDING);
    const [kid, blob] = more.split('.') as [string, string];
    for (const alt of [padded(blob), unusedBitsSet(blob)]) if (alt) refused(() => sealer.unseal(`${kid}.${alt}`, BINDING), /not a cursor issued by this hub/);
  });

  test('forged and garbage cursors → 400, never a crash', () => {
    const { sealer, ring } = setup();
    for (const more of ['', 'x', 'forged.cursor.value', 'a.b', `${ring.active('enc').kid}.`, `${ring.active('enc').kid}.AAAA`, `${ring.active('enc').kid}.${'A'.repeat(40)}`, 'é.ü', 'x'.repeat(5000), '..', Buffer.from(LIBRARY_CURSOR).toString('base64url')]) {
      refused(() => sealer.unseal(more, BINDING), /more: .*start again from the first page/);
    }
  });

  test('another user\'s, provider\'s or query\'s cursor → 400 "belongs to another query, folder or user"', () => {
    const { sealer } = setup();
    const more = sealer.seal(LIBRARY_CURSOR, BINDING);
    for (const other of [
      ['user-2', 'library', 'search', 'harbour', null, [], null],
      ['user-1', 'webdav', 'search', 'harbour', null, [], null],
      ['user-1', 'library', 'search', 'harb', null, [], null],
      ['user-1', 'library', 'search', 'harbour', '/Alpha', [], null],
      ['user-1', 'library', 'search', 'harbour', null, ['type:image'], null],
      ['user-1', 'library', 'folder', 'harbour', null, [], null],
    ] as (string | null | string[])[][]) {
      refused(() => sealer.unseal(more, CursorSealer.binding(other)), /belongs to another query, folder or user/);
    }
  });

  test('a cursor is stale after 24 hours → 400 "stale"', () => {
    const { sealer, clock } = setup();
    const more = sealer.seal(LIBRARY_CURSOR, BINDING);
    clock.advance(CURSOR_TTL_MS);
    assert.equal(sealer.unseal(more, BINDING), LIBRARY_CURSOR);
    clock.advance(1);
    refused(() => sealer.unseal(more, BINDING), /stale \(older than 24 hours\)/);
  });

  test('a cursor sealed under the previous key opens after a rotation; once that key is retired it is a 400', () => {
    const { sealer, ring, clock } = setup();
    const before = sealer.seal(LIBRARY_CURSOR, BINDING);
    clock.advance(3600_000);
    ring.replace(rotatedKeys(ring.toJSON(), clock.now(), 31 * DAY));
    const after = sealer.seal(LIBRARY_CURSOR, BINDING);
    assert.notEqual(after.split('.')[0], before.split('.')[0], 'new cursors use the new key');
    assert.equal(sealer.unseal(before, BINDING), LIBRARY_CURSOR);
    assert.equal(sealer.unseal(after, BINDING), LIBRARY_CURSOR);
    // A later rotation past the retirement age drops the first key.
    clock.advance(32 * DAY);
    ring.replace(rotatedKeys(ring.toJSON(), clock.now(), 31 * DAY));
    refused(() => sealer.unseal(before, BINDING), /issued under a retired key/);
  });
});
