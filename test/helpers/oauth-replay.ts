/**
 * The vendor-neutral part of OAuth 2.0 authorization code + PKCE (S256) as the loopback replays
 * play it, so that each replay keeps only what its vendor documents: endpoint paths, code format,
 * client authentication, error statuses and bodies, token bodies and refresh-token rotation.
 */
import { createHash } from 'node:crypto';

/** Codes handed out by a replay's consent, each with the PKCE challenge and redirect URI it was asked with. */
export class PendingCodes {
  private readonly codes = new Map<string, { challenge: string; redirect: string }>();

  /** Holds `code` for the authorization request `u`; the consent's 302 location: redirect_uri with code and state. */
  issue(u: URL, code: string): string {
    this.codes.set(code, { challenge: u.searchParams.get('code_challenge') ?? '', redirect: u.searchParams.get('redirect_uri')! });
    const back = new URL(u.searchParams.get('redirect_uri')!);
    back.searchParams.set('code', code);
    back.searchParams.set('state', u.searchParams.get('state')!);
    return back.href;
  }

  /** True only for a held code (spent either way: single use) of the same redirect_uri whose challenge is the SHA-256 of code_verifier. */
  redeem(form: URLSearchParams): boolean {
    const c = this.codes.get(form.get('code') ?? '');
    this.codes.delete(form.get('code') ?? '');
    if (!c || c.redirect !== form.get('redirect_uri')) return false;
    return createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url') === c.challenge;
  }
}

/**
 * A vendor's RFC 6749 token body `tpl` with a new access token (`<its access_token>.<n>`) and,
 * when `refresh` is given, a new refresh token (`<its refresh_token>.<n>`); each goes into its set
 * so that the replay's bearer check and refresh grant know it. Without `refresh` the body keeps
 * whatever refresh_token the template has (none, for most refresh answers).
 */
export function issueTokens(tpl: any, n: number, access: Set<string>, refresh?: Set<string>): any {
  const at = `${tpl.access_token}.${n}`;
  access.add(at);
  if (!refresh) return { ...tpl, access_token: at };
  const rt = `${tpl.refresh_token}.${n}`;
  refresh.add(rt);
  return { ...tpl, access_token: at, refresh_token: rt };
}
