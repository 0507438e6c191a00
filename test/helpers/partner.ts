/**
 * A test partner: its own RSA key pair, a JWT signer with every knob the exchange rules need,
 * and a real JWKS server on loopback.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose';

export interface TestKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function makeKey(kid = `k-${randomUUID().slice(0, 8)}`): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

export interface SignOptions {
  key: TestKey;
  issuer: string;
  audience?: string | string[];
  sub?: string | null;
  email?: string | null;
  /** Seconds since epoch; defaults to the given clock "now". */
  iat?: number | null;
  exp?: number | null;
  jti?: string | null;
  kid?: string | null;
  alg?: string;
  extra?: JWTPayload;
}

/** Signs a partner JWT; null removes a claim, undefined takes the default. */
export async function signPartnerJwt(nowMs: number, o: SignOptions): Promise<string> {
  const now = Math.floor(nowMs / 1000);
  const payload: JWTPayload = { ...o.extra };
  payload.iss = o.issuer;
  const set = (name: string, v: unknown, dflt: unknown) => {
    if (v === null) return;
    payload[name] = v === undefined ? dflt : v;
  };
  set('aud', o.audience, 'urn:damhub');
  set('sub', o.sub, 'user-1');
  set('email', o.email, 'user1@example.com');
  set('iat', o.iat, now);
  set('exp', o.exp, now + 300);
  set('jti', o.jti, randomUUID());
  const header: Record<string, unknown> = { alg: o.alg ?? 'RS256', typ: 'JWT' };
  if (o.kid !== null) header.kid = o.kid ?? o.key.kid;
  return new SignJWT(payload).setProtectedHeader(header as { alg: string }).sign(o.key.privateKey);
}

/** A JWKS endpoint on loopback that counts fetches and can be told to misbehave. */
export class JwksServer {
  fetches = 0;
  keys: JWK[] = [];
  /** 'ok' | 'huge' | 'slow' | 'error' */
  mode: 'ok' | 'huge' | 'slow' | 'error' = 'ok';
  private server = http.createServer((req, res) => {
    this.fetches++;
    if (this.mode === 'error') return void res.writeHead(500).end('boom');
    if (this.mode === 'slow') return void setTimeout(() => res.end(JSON.stringify({ keys: this.keys })), 5000).unref();
    if (this.mode === 'huge') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(`{"keys":[],"pad":"${'x'.repeat(200_000)}"}`);
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: this.keys }));
  });

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/jwks.json`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
