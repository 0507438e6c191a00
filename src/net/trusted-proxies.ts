/**
 * DAMHUB_TRUSTED_PROXIES: the reverse proxies whose X-Forwarded-For the hub believes. Fastify's
 * `trustProxy` takes the list (through proxy-addr): for a request whose socket address is in it,
 * `request.ip` is the nearest address in X-Forwarded-For that is not (the client the proxy saw);
 * for any other request it is the socket address, whatever the headers say. Nothing else of the
 * forwarded headers matters to the hub: every URL it hands out is built from DAMHUB_PUBLIC_URL,
 * never from Host, X-Forwarded-Host or X-Forwarded-Proto (docs/operating.md).
 */
import net from 'node:net';

/** proxy-addr's names for whole ranges: 127.0.0.0/8 and ::1, 169.254.0.0/16 and fe80::/10, 10/8, 172.16/12, 192.168/16 and fc00::/7. */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * The entries of a comma-separated list of IP addresses, CIDR ranges and the names `loopback`,
 * `linklocal`, `uniquelocal`; throws naming the first entry that is none of them (proxy-addr
 * would accept looser spellings such as `127.1` or a netmask; the hub takes only plain ones).
 */
export function parseTrustedProxies(value: string): string[] {
  const entries = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const e of entries) {
    if (!isProxyEntry(e)) throw new Error(`${JSON.stringify(e)} is not an IP address, a CIDR range (10.0.0.0/8, fd00::/8) or one of loopback, linklocal, uniquelocal`);
  }
  return entries;
}

function isProxyEntry(e: string): boolean {
  if (RANGE_NAMES.has(e)) return true;
  const slash = e.indexOf('/');
  if (slash === -1) return net.isIP(e) !== 0;
  const family = net.isIP(e.slice(0, slash));
  const bits = e.slice(slash + 1);
  if (family === 0 || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}
