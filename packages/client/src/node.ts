/**
 * @damhub/client/node: the partner's backend side. Signs the partner JWT a token exchange takes
 * (RS256, kid, iss/aud/sub/email, fresh iat and jti per call) and publishes the public key as a
 * JWKS. Built on node:crypto only; the private key never leaves the backend. `fileSource` hands a
 * file on disk to upload()/update() as a stream with its length, never read whole into memory.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign, type KeyObject, type JsonWebKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { StreamSource } from './upload-source.js';

export type PrivateKeyInput = string | Buffer | KeyObject | JsonWebKey;

export interface PartnerSignerOptions {
  /** RSA private key: PEM (PKCS#8 or PKCS#1), a KeyObject or a private JWK. At least 2048 bits. */
  privateKey: PrivateKeyInput;
  /** The `kid` of this key in the partner's JWKS. */
  kid: string;
  /** Exactly the issuer registered at the hub (trailing slash included). */
  issuer: string;
  /** The registered audience (default `urn:damhub`). */
  audience?: string;
  /** Lifetime of each JWT in seconds (default 300; keep it short, the hub burns each JWT once). */
  ttlSec?: number;
  /** Epoch milliseconds; inject for tests. */
  now?: () => number;
}

export interface PartnerUser {
  /** The user's stable id at the partner. */
  sub: string;
  email?: string;
  name?: string;
  given_name?: string;
  family_name?: string;
  /** Any further claims (they cannot override iss, aud, iat, exp or jti). */
  extra?: Record<string, unknown>;
}

export type PartnerSigner = (user: PartnerUser) => Promise<string>;

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

export function toPrivateKey(k: PrivateKeyInput): KeyObject {
  let key: KeyObject;
  if (typeof k === 'string' || Buffer.isBuffer(k)) key = createPrivateKey(k);
  else if ('type' in k && typeof (k as KeyObject).export === 'function') key = k as KeyObject;
  else key = createPrivateKey({ key: k as JsonWebKey, format: 'jwk' });
  if (key.type !== 'private') throw new TypeError('a private key is required');
  if (key.asymmetricKeyType !== 'rsa') throw new TypeError(`RS256 needs an RSA key, not ${key.asymmetricKeyType}`);
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < 2048) throw new TypeError(`the RSA key has ${bits} bits; at least 2048 are required`);
  return key;
}

/**
 * A signer for partner JWTs. Each call gets a fresh `iat`, `exp = iat + ttl` and a random `jti`,
 * so every exchange presents a token the hub has not seen (it rejects replays).
 */
export function createPartnerSigner(o: PartnerSignerOptions): PartnerSigner {
  const key = toPrivateKey(o.privateKey);
  if (!o.kid) throw new TypeError('kid is required');
  if (!o.issuer) throw new TypeError('issuer is required');
  const ttl = o.ttlSec ?? 300;
  const now = o.now ?? Date.now;
  const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: o.kid }));
  return async (user) => {
    if (!user?.sub) throw new TypeError('sub is required');
    const iat = Math.floor(now() / 1000);
    const claims: Record<string, unknown> = { ...user.extra };
    for (const k of ['email', 'name', 'given_name', 'family_name'] as const) if (user[k] !== undefined) claims[k] = user[k];
    Object.assign(claims, { iss: o.issuer, aud: o.audience ?? 'urn:damhub', sub: user.sub, iat, exp: iat + ttl, jti: randomUUID() });
    const input = `${header}.${b64url(JSON.stringify(claims))}`;
    return `${input}.${b64url(sign('sha256', Buffer.from(input), key))}`;
  };
}

export interface PublicJwk extends JsonWebKey {
  kty: 'RSA';
  n: string;
  e: string;
  kid: string;
  alg: 'RS256';
  use: 'sig';
}

/** The public JWK of a key (private or public), with kid, alg RS256 and use sig. Never contains private parts. */
export function publicJwk(k: PrivateKeyInput | KeyObject, kid: string): PublicJwk {
  const pub = typeof k === 'object' && !Buffer.isBuffer(k) && (k as KeyObject).type === 'public' ? (k as KeyObject) : createPublicKey(toPrivateKey(k));
  const jwk = pub.export({ format: 'jwk' }) as JsonWebKey;
  if (jwk.kty !== 'RSA') throw new TypeError('an RSA key is required');
  return { kty: 'RSA', n: jwk.n!, e: jwk.e!, kid, alg: 'RS256', use: 'sig' };
}

/** The JWKS document a partner publishes (e.g. at /.well-known/jwks.json). Several keys allow rotation. */
export function publicJwks(keys: { key: PrivateKeyInput | KeyObject; kid: string }[]): { keys: PublicJwk[] } {
  return { keys: keys.map(({ key, kid }) => publicJwk(key, kid)) };
}

/**
 * A request handler (node:http, Express, Fastify's raw request) that serves the JWKS with
 * caching headers the hub's JWKS cache respects.
 */
export function jwksHandler(keys: { key: PrivateKeyInput | KeyObject; kid: string }[], opts: { maxAgeSec?: number } = {}) {
  const body = JSON.stringify(publicJwks(keys));
  return (_req: unknown, res: { writeHead(status: number, headers: Record<string, string>): unknown; end(body: string): unknown }) => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': `public, max-age=${opts.maxAgeSec ?? 600}` });
    res.end(body);
  };
}

/** A new RSA key pair for a partner (2048 bits), as PEM, with a random kid. */
export function generatePartnerKey(bits = 2048): { kid: string; privateKeyPem: string; publicJwk: PublicJwk } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  const kid = `k-${randomUUID().slice(0, 8)}`;
  return { kid, privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, publicJwk: publicJwk(privateKey, kid) };
}

/**
 * A file on disk for `client.upload(folderId, await fileSource(p))` or `update()`: a read stream,
 * its size (the hub checks the declared length), its base name and, when given, its media type.
 * Large files go through tus one chunk at a time (the client's `tusChunkSize`).
 */
export async function fileSource(file: string, o: { name?: string; type?: string } = {}): Promise<StreamSource> {
  const st = await fs.promises.stat(file);
  if (!st.isFile()) throw new TypeError(`${file} is not a file`);
  return { stream: fs.createReadStream(file), size: st.size, name: o.name ?? path.basename(file), type: o.type };
}
