/**
 * DAM connection tokens opened a second time come from memory (src/auth/provider-tokens.ts). A
 * remembered token must answer exactly as decrypting it again would: same claims, and rejected
 * once it expires, once its key leaves the ring, or when presented as the other token type.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyRing } from '../../src/auth/keys.js';
import { DAM_ACCESS_TYP, DAM_REFRESH_TYP, ProviderTokenError, ProviderTokens } from '../../src/auth/provider-tokens.js';
import { ManualClock } from '../../src/clock.js';
import { EncryptJWT } from 'jose';
import { respellings, sameBytes } from '../helpers/respell.js';

const T0 = Date.UTC(2026, 5, 1, 12);
const CLAIMS = { typ: DAM_ACCESS_TYP, prv: 'library', sub: 'user-1', pid: 'partner-1', cred: { account: 'acc-1' } } as const;

function setup() {
  const clock = new ManualClock(T0);
  const ring = KeyRing.generate(T0);
  return { clock, ring, tokens: new ProviderTokens(ring, clock) };
}

async function rejects(p: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof ProviderTokenError && message.test(e.message));
}

describe('opened DAM connection tokens', () => {
  test('a token opened again gives the same claims, frozen against changes by a caller', async () => {
    const { tokens } = setup();
    const token = await tokens.issue(CLAIMS, 600);
    const first = await tokens.open(token, DAM_ACCESS_TYP);
    const again = await tokens.open(token, DAM_ACCESS_TYP);
    assert.deepEqual(again, { ...CLAIMS, cred: { account: 'acc-1' }, exp: Math.floor(T0 / 1000) + 600 });
    assert.deepEqual(again, first);
    assert.throws(() => { (again.cred as Record<string, unknown>).account = 'acc-2'; }, TypeError);
    assert.equal((await tokens.open(token, DAM_ACCESS_TYP)).cred.account, 'acc-1');
  });

  test('a remembered token expires at its exp, like a decrypted one', async () => {
    const { tokens, clock, ring } = setup();
    const token = await tokens.issue(CLAIMS, 600);
    await tokens.open(token, DAM_ACCESS_TYP);
    clock.advance(599_000);
    assert.equal((await tokens.open(token, DAM_ACCESS_TYP)).sub, 'user-1');
    clock.advance(1_000);
    await rejects(tokens.open(token, DAM_ACCESS_TYP), /expired/);
    // A fresh instance (nothing remembered) says the same: the memo changed no answer.
    await rejects(new ProviderTokens(ring, clock).open(token, DAM_ACCESS_TYP), /expired/);
  });

  test('a remembered token stops working when its key leaves the ring', async () => {
    const { tokens, ring } = setup();
    const token = await tokens.issue(CLAIMS, 600);
    await tokens.open(token, DAM_ACCESS_TYP);
    ring.replace(KeyRing.generate(T0).toJSON());
    await rejects(tokens.open(token, DAM_ACCESS_TYP), /unknown or retired key/);
    await rejects(tokens.open(token, DAM_ACCESS_TYP), /unknown or retired key/);
  });

  test('a remembered access token is still refused where a refresh token is expected', async () => {
    const { tokens } = setup();
    const token = await tokens.issue(CLAIMS, 600);
    await tokens.open(token, DAM_ACCESS_TYP);
    await rejects(tokens.open(token, DAM_REFRESH_TYP), /expected a DAM refresh token/);
    assert.equal((await tokens.open(token, DAM_ACCESS_TYP)).typ, DAM_ACCESS_TYP);
  });

  test('a token differing in one character is decrypted, not matched, and fails', async () => {
    const { tokens } = setup();
    const token = await tokens.issue(CLAIMS, 600);
    await tokens.open(token, DAM_ACCESS_TYP);
    const parts = token.split('.');
    const tag = parts[4]!;
    parts[4] = (tag[0] === 'A' ? 'B' : 'A') + tag.slice(1);
    await rejects(tokens.open(parts.join('.'), DAM_ACCESS_TYP), /malformed or was tampered/);
  });

  test('a re-spelt token (padding or a flipped unused bit in IV, ciphertext or tag) is refused, opened before or not', async () => {
    const { tokens } = setup();
    const token = await tokens.issue(CLAIMS, 600);
    const variants = respellings(token);
    // The tag (16 bytes: 22 characters, 4 unused bits) always has both re-spellings.
    assert.ok(variants.filter((v) => v.what.startsWith('part 4')).length === 2, variants.map((v) => v.what).join());
    for (const v of variants) {
      const i = Number(v.what[5]);
      assert.ok(sameBytes(v.token.split('.')[i]!, token.split('.')[i]!), v.what);
      await rejects(tokens.open(v.token, DAM_ACCESS_TYP), /canonical base64url/);
    }
    await tokens.open(token, DAM_ACCESS_TYP);
    for (const v of variants) await rejects(tokens.open(v.token, DAM_ACCESS_TYP), /canonical base64url/);
    assert.equal(tokens.remembered, 1);
  });

  test('a token without exp is refused (it would otherwise open for ever)', async () => {
    const { tokens, ring, clock } = setup();
    const key = ring.active('enc');
    const noExp = await new EncryptJWT({ typ: CLAIMS.typ, prv: CLAIMS.prv, pid: CLAIMS.pid, cred: CLAIMS.cred })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: key.kid })
      .setSubject(CLAIMS.sub)
      .setIssuedAt(Math.floor(T0 / 1000))
      .encrypt(key.key);
    await rejects(tokens.open(noExp, DAM_ACCESS_TYP), /no expiry/);
    clock.advance(365 * 86400_000);
    await rejects(tokens.open(noExp, DAM_ACCESS_TYP), /no expiry/);
  });

  test('the memo keeps the tokens of the last minute only', async () => {
    const { tokens, clock } = setup();
    const old = await tokens.issue(CLAIMS, 3600);
    await tokens.open(old, DAM_ACCESS_TYP);
    assert.equal(tokens.remembered, 1);
    clock.advance(61_000);
    const fresh = await tokens.issue({ ...CLAIMS, sub: 'user-2' }, 3600);
    await tokens.open(fresh, DAM_ACCESS_TYP);
    assert.equal(tokens.remembered, 1, 'the token opened a minute ago was dropped');
    // Opening it again decrypts it again, with the same answer.
    assert.equal((await tokens.open(old, DAM_ACCESS_TYP)).sub, 'user-1');
    assert.equal(tokens.remembered, 2);
  });
});
