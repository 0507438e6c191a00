/**
 * Download URLs for connectors whose bytes need the user's DAM credentials (WebDAV, a private
 * bucket without presigning). A browser cannot send headers for a link, so the URL carries an
 * encrypted grant: the connection's credentials and the item, under the hub's `enc` key (JWE dir +
 * A256GCM, like the DAM connection token itself), expiring after a few hours. The hub decrypts it
 * and streams the item through; the grant names exactly one provider, partner, user and item, and
 * works only while that partner is enabled and that user exists (checked by the download route,
 * src/content/media-access.ts).
 */
import { EncryptJWT, jwtDecrypt } from 'jose';
import type { Clock } from '../../clock.js';
import { seconds } from '../../clock.js';
import type { KeyRing } from '../../auth/keys.js';
import { hubError } from '../../errors.js';
import type { ProviderCredentials } from '../../auth/provider-tokens.js';

const TYP = 'damhub-media-grant';
export const GRANT_TTL_SEC = 4 * 3600;

export interface MediaGrant {
  providerId: string;
  /** The partner of the hub user: disabling or removing it ends the grant. */
  partnerId: string;
  userId: string;
  credentials: ProviderCredentials;
  /** The connector's own reference to the item (path, key, version id). */
  item: Record<string, unknown>;
}

export class MediaGrants {
  constructor(private readonly keys: KeyRing, private readonly clock: Clock, private readonly ttlSec = GRANT_TTL_SEC) {}

  async seal(g: MediaGrant): Promise<string> {
    const key = this.keys.active('enc');
    const now = seconds(this.clock.now());
    return new EncryptJWT({ typ: TYP, prv: g.providerId, ptn: g.partnerId, cred: g.credentials, item: g.item })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: key.kid })
      .setSubject(g.userId)
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttlSec)
      .encrypt(key.key);
  }

  /** The grant, or hub-access-denied saying why the link is no good. */
  async open(token: string, providerId: string): Promise<MediaGrant> {
    const denied = (why: string) => hubError('hub-access-denied', `download link check failed: ${why}`);
    let payload;
    try {
      ({ payload } = await jwtDecrypt(token, (h) => {
        const k = h.kid ? this.keys.find(h.kid, 'enc') : undefined;
        if (!k) throw new Error('unknown key');
        return k.key;
      }, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'], currentDate: new Date(this.clock.now()) }));
    } catch (e) {
      throw denied((e as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'the link has expired; fetch the asset again for a fresh one' : 'the link is malformed or was altered');
    }
    if (payload.typ !== TYP || payload.prv !== providerId || typeof payload.sub !== 'string') throw denied('the link belongs to another provider');
    // Grants sealed before they were bound to a partner must not outlive the access either.
    if (typeof payload.ptn !== 'string') throw denied('the link is not bound to a partner; fetch the asset again for a fresh one');
    return { providerId, partnerId: payload.ptn, userId: payload.sub, credentials: payload.cred as ProviderCredentials, item: payload.item as Record<string, unknown> };
  }
}
