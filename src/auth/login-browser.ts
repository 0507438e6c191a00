/**
 * Binds a DAM login state to the browser that opened its start page (issue 28, item 2).
 *
 * Whoever held a sign-in link used to be able to finish the login, and the tokens went to the hub
 * user who started it: an attacker could start a login, pass its first page himself and send the
 * vendor's consent link to a victim. The start page (the hub's confirm page, or a form connector's
 * form) now sets a cookie, and the OAuth callback, the confirm page's Continue and the form's POST
 * act only for a browser that carries it. The victim's browser, which never saw the attacker's start
 * page, does not.
 *
 * The cookie is stateless: its value is an HMAC of the state under the hub's user-hash secret
 * (shared by every node of a cluster), so any node can check it and nothing is stored. Its name
 * carries a short hash of the state, so several logins in one browser each keep their own cookie.
 * HttpOnly; SameSite=Lax, because the vendor's callback is a top-level cross-site GET navigation,
 * which Lax cookies accompany (and a cross-site POST does not); `__Host-` prefixed (then Secure and
 * Path=/) when the hub is served over https, else Path=<base>/api/v1/auth.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export class LoginBrowser {
  private readonly secure: boolean;
  private readonly path: string;

  constructor(private readonly secret: string, publicUrl: string, private readonly maxAgeSec: number) {
    const u = new URL(publicUrl);
    this.secure = u.protocol === 'https:';
    // __Host- requires Secure, Path=/ and no Domain (RFC 6265bis section 4.1.3.2).
    this.path = this.secure ? '/' : `${u.pathname.replace(/\/+$/, '')}/api/v1/auth`;
  }

  /** The cookie's name for `state`: its own per state, so concurrent logins do not overwrite each other. */
  name(state: string): string {
    const h = createHash('sha256').update(`login-browser-name\0${state}`).digest('base64url').slice(0, 16);
    return `${this.secure ? '__Host-' : ''}damhub-login-${h}`;
  }

  private value(state: string): string {
    return createHmac('sha256', this.secret).update(`login-browser\0${state}`).digest('base64url');
  }

  /** The Set-Cookie header value the start page sends. */
  setCookie(state: string): string {
    return `${this.name(state)}=${this.value(state)}; Path=${this.path}; Max-Age=${this.maxAgeSec}; HttpOnly; SameSite=Lax${this.secure ? '; Secure' : ''}`;
  }

  /** The Set-Cookie header value that removes it (the login is over). */
  clearCookie(state: string): string {
    return `${this.name(state)}=; Path=${this.path}; Max-Age=0; HttpOnly; SameSite=Lax${this.secure ? '; Secure' : ''}`;
  }

  /** Whether a request's Cookie header carries this state's cookie. */
  holds(state: string, cookieHeader: string | string[] | undefined): boolean {
    if (!state || !cookieHeader) return false;
    const header = Array.isArray(cookieHeader) ? cookieHeader.join('; ') : cookieHeader;
    const name = this.name(state);
    const want = Buffer.from(this.value(state));
    for (const part of header.split(';')) {
      const eq = part.indexOf('=');
      if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
      const got = Buffer.from(part.slice(eq + 1).trim());
      if (got.length === want.length && timingSafeEqual(got, want)) return true;
    }
    return false;
  }
}
