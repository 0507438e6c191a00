/**
 * Every connector of the catalog, enabled at once the way an operator enables them, is listed by
 * GET /auth/providers with a logo the picker can show: an inline SVG data URI must survive URL
 * parsing whole (a raw `#` starts a fragment and cuts the image off in a browser) and render.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import sharp from 'sharp';
import { knownConnectors, oauthConnectors } from '../../src/catalog.js';
import { bearer, startTestHub } from '../helpers/hub.js';

test('every catalog connector is listed with a logo that is whole and renders', async () => {
  const oauthApps = Object.fromEntries(oauthConnectors().map((id) => [id, { clientId: `${id}-app`, clientSecret: 'secret' }]));
  const connectors = Object.fromEntries(knownConnectors().map((id) => [id, {}]));
  const h = await startTestHub({ config: { oauthApps, connectors } });
  try {
    const access = (await h.login()).access_token;
    const res = await h.app.inject({ method: 'GET', url: '/api/v1/auth/providers', headers: { authorization: bearer(access) } });
    assert.equal(res.statusCode, 200, res.body);
    const listed = res.json() as { id: string; logo: string }[];
    assert.deepEqual(listed.map((p) => p.id).sort(), [...oauthConnectors(), ...knownConnectors()].sort());
    for (const p of listed) {
      assert.equal(typeof p.logo, 'string', p.id);
      if (!p.logo.startsWith('data:')) {
        // A logo the kit serves: it answers an SVG.
        const served = await h.app.inject({ method: 'GET', url: new URL(p.logo, 'http://hub.test').pathname });
        assert.equal(served.statusCode, 200, `${p.id}: ${p.logo}`);
        continue;
      }
      assert.equal(new URL(p.logo).hash, '', `${p.id}: a raw "#" in the data URI cuts the image at the fragment`);
      const svg = Buffer.from(await (await fetch(p.logo)).arrayBuffer());
      assert.match(svg.toString('utf8'), /<\/svg>\s*$/, `${p.id}: the SVG is complete`);
      const png = await sharp(svg).png().toBuffer();
      const { width, height } = await sharp(png).metadata();
      assert.ok(width! >= 16 && height! >= 16, `${p.id}: renders`);
    }
  } finally {
    await h.close();
  }
});
