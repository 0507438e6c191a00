/**
 * The demo partner of `npm start`: an RSA key pair generated into the data dir and registered
 * with an inline JWKS. It stands in for a partner's backend so the demo page can show a real
 * exchange; never enable --demo on a hub reachable by others.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { writeSecretFile } from '../auth/keys.js';
import { DEFAULT_AUDIENCE } from '../auth/partners.js';
import type { Hub } from '../hub.js';

export const DEMO_PARTNER_ID = 'demo';
/** The demo partner's key pair in the data dir (the generated demo library only: src/demo/leftovers.ts). */
export const DEMO_KEY_FILE = 'demo-partner.json';
/** The demo partner's issuer: not a URL of one hub, since several demo hubs may share a data directory. */
export const DEMO_ISSUER = 'urn:damhub:demo-partner';
const MAX_DEMO_ORIGINS = 8;

interface DemoKeys {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

export class DemoPartner {
  private constructor(private readonly keys: DemoKeys, readonly issuer: string, private readonly hub: Hub) {}

  /** `ephemeral` (demo mode over one's own library): the key pair lives in memory only, never in the data dir. */
  static async setup(hub: Hub, ephemeral = false): Promise<DemoPartner> {
    const file = path.join(hub.config.dataDir, DEMO_KEY_FILE);
    let keys: DemoKeys;
    if (!ephemeral && fs.existsSync(file)) {
      keys = JSON.parse(fs.readFileSync(file, 'utf8')) as DemoKeys;
    } else {
      const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
      const kid = `demo-${randomUUID().slice(0, 8)}`;
      keys = { kid, privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256' }, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
      if (!ephemeral) writeSecretFile(file, JSON.stringify(keys));
    }
    // One issuer for every demo hub of the data directory, and each one's origin added to the
    // allowed ones: a second `serve --demo` on another port beside a running one used to rewrite
    // the issuer and origins to its own URL, and the first one's demo page stopped working.
    const issuer = DEMO_ISSUER;
    const origin = new URL(hub.config.publicUrl).origin;
    const now = hub.clock.now();
    const existing = await hub.stores.partners.get(DEMO_PARTNER_ID);
    // Most recent last, a few kept: ports of demos long stopped drop off.
    const origins = [...(existing?.allowedOrigins ?? []).filter((o) => o !== origin), origin].slice(-MAX_DEMO_ORIGINS);
    const fields = { name: 'Demo partner', issuer, audience: DEFAULT_AUDIENCE, jwksUrl: null, jwks: { keys: [keys.publicJwk] }, maxTokenAgeSec: 3600, rateLimitPerMin: 600, allowedOrigins: origins, enabled: true,
      // Writes into the generated demo library only: a demo over one's own folder never writes to it.
      writes: !ephemeral };
    if (existing) await hub.stores.partners.update(DEMO_PARTNER_ID, fields, now);
    else await hub.stores.partners.create({ id: DEMO_PARTNER_ID, ...fields }, now);
    return new DemoPartner(keys, issuer, hub);
  }

  /** What a partner backend does per exchange: a fresh RS256 JWT with a new jti. */
  async sign(user: { sub: string; email: string; name?: string }): Promise<string> {
    const key = await importJWK(this.keys.privateJwk, 'RS256');
    const now = Math.floor(this.hub.clock.now() / 1000);
    return new SignJWT({ email: user.email, name: user.name })
      .setProtectedHeader({ alg: 'RS256', kid: this.keys.kid, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setAudience(DEFAULT_AUDIENCE)
      .setSubject(user.sub)
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .setJti(randomUUID())
      .sign(key);
  }
}
