/**
 * Partner registration rules shared by the admin API and `damhub partners` (SPEC.md section 4).
 */
import type { JSONWebKeySet } from 'jose';
import { validationError } from '../errors.js';
import type { Partner, PartnerInput, PartnerPatch } from '../stores/types.js';
import { assertJwks, JwksError } from './jwks-cache.js';

export const DEFAULT_AUDIENCE = 'urn:damhub';
export const DEFAULT_MAX_TOKEN_AGE_SEC = 3600;

export interface PartnerRequest {
  id?: string;
  name?: string;
  issuer?: string;
  audience?: string;
  jwksUrl?: string | null;
  jwks?: unknown;
  maxTokenAge?: number;
  rateLimit?: number;
  allowedOrigins?: string[];
  enabled?: boolean;
  /** Whether the partner's users may write (docs/writes.md "Who may write"); off unless given. */
  writes?: boolean;
}

export function partnerInput(r: PartnerRequest, defaultRateLimit: number): PartnerInput {
  if (!r.issuer) throw validationError('issuer is required');
  if (!r.jwksUrl && !r.jwks) throw validationError('either jwksUrl or jwks (inline JWKS) is required');
  const patch = partnerPatch(r);
  return {
    id: r.id,
    name: patch.name ?? r.issuer,
    issuer: r.issuer,
    audience: patch.audience ?? DEFAULT_AUDIENCE,
    jwksUrl: patch.jwksUrl ?? null,
    jwks: patch.jwks ?? null,
    maxTokenAgeSec: patch.maxTokenAgeSec ?? DEFAULT_MAX_TOKEN_AGE_SEC,
    rateLimitPerMin: patch.rateLimitPerMin ?? defaultRateLimit,
    allowedOrigins: patch.allowedOrigins ?? [],
    enabled: patch.enabled ?? true,
    writes: patch.writes ?? false,
  };
}

export function partnerPatch(r: PartnerRequest): PartnerPatch {
  const p: PartnerPatch = {};
  if (r.id !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(r.id)) throw validationError('id may hold letters, digits, ".", "_" and "-" (at most 64)');
  if (r.name !== undefined) p.name = r.name;
  if (r.issuer !== undefined) {
    if (!r.issuer.trim() || r.issuer.length > 512) throw validationError('issuer must be a non-empty string of at most 512 characters');
    p.issuer = r.issuer;
  }
  if (r.audience !== undefined) p.audience = r.audience;
  if (r.jwksUrl !== undefined && r.jwksUrl !== null) {
    let u: URL;
    try {
      u = new URL(r.jwksUrl);
    } catch {
      throw validationError('jwksUrl must be an absolute http(s) URL');
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw validationError('jwksUrl must be an absolute http(s) URL');
    p.jwksUrl = r.jwksUrl;
    p.jwks = null;
  }
  if (r.jwks !== undefined && r.jwks !== null) {
    try {
      assertJwks(r.jwks);
    } catch (e) {
      throw validationError(`jwks: ${e instanceof JwksError ? e.message : (e as Error).message}`);
    }
    p.jwks = r.jwks as JSONWebKeySet;
    p.jwksUrl = null;
  }
  if (r.maxTokenAge !== undefined) {
    if (!Number.isInteger(r.maxTokenAge) || r.maxTokenAge < 1 || r.maxTokenAge > 86_400) throw validationError('maxTokenAge must be an integer number of seconds in 1..86400');
    p.maxTokenAgeSec = r.maxTokenAge;
  }
  if (r.rateLimit !== undefined) {
    if (!Number.isInteger(r.rateLimit) || r.rateLimit < 1 || r.rateLimit > 1_000_000) throw validationError('rateLimit must be an integer number of exchanges per minute in 1..1000000');
    p.rateLimitPerMin = r.rateLimit;
  }
  if (r.allowedOrigins !== undefined) {
    for (const o of r.allowedOrigins) {
      let u: URL | null = null;
      try {
        u = new URL(o);
      } catch { /* reported below */ }
      if (!u || u.origin !== o) throw validationError(`allowedOrigins: ${JSON.stringify(o)} is not an origin like https://app.example.com`);
    }
    p.allowedOrigins = r.allowedOrigins;
  }
  if (r.enabled !== undefined) p.enabled = r.enabled;
  if (r.writes !== undefined) p.writes = r.writes;
  return p;
}

/** The public view of a partner (admin API, CLI). */
export function partnerView(p: Partner) {
  return {
    id: p.id,
    name: p.name,
    issuer: p.issuer,
    audience: p.audience,
    jwksUrl: p.jwksUrl,
    jwks: p.jwks,
    maxTokenAge: p.maxTokenAgeSec,
    rateLimit: p.rateLimitPerMin,
    allowedOrigins: p.allowedOrigins,
    enabled: p.enabled,
    writes: p.writes,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}
