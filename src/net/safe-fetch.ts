/**
 * Fetches a URL given by a client (the reference image of a search by image) without letting the
 * client reach what only the hub can reach (SSRF):
 *
 * - only http: and https:, no credentials in the URL;
 * - the host name is resolved once; if any address it resolves to is in a special-purpose range
 *   of the IANA registries (loopback, private, link-local incl. cloud metadata 169.254.169.254,
 *   unique-local incl. fd00:ec2::254, multicast, carrier-grade NAT, documentation, benchmarking,
 *   240/4, IPv4-compatible ::/96, 6to4, Teredo, NAT64 embedding a non-global IPv4 address...) the
 *   URL is refused, naming the rule (AddressPolicy), unless the configured allowlist names the host
 *   or a range holding the address;
 * - the connection is pinned to the address that was checked (a custom `lookup`), so a second,
 *   different DNS answer cannot redirect it (DNS rebinding); TLS still verifies the host name;
 * - redirects are followed by hand, each target checked again, at most `maxRedirects`;
 * - a connect timeout, a total deadline for the whole exchange, and a byte limit enforced while
 *   streaming (the body is abandoned as soon as it passes the limit, so memory stays bounded).
 *
 * Failures are FetchErrors with a kind the caller maps to a status (image-reference.ts).
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface SafeFetchOptions {
  /** Host names (exact, case-insensitive), IP addresses or CIDR ranges allowed although not public. */
  allow: string[];
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  /** Ends the fetch (its connection closed) when it fires: the client that asked for it left. */
  signal?: AbortSignal;
}

export type FetchErrorKind = 'invalid-url' | 'refused' | 'too-large' | 'failed';

export class FetchError extends Error {
  constructor(readonly kind: FetchErrorKind, message: string) {
    super(message);
    this.name = 'FetchError';
  }
}

type Addr = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Addr, number];

/**
 * The address rules, checked in order before any connection (reference images, connector server
 * URLs). The ranges are ipaddr.js's tables of the IANA IPv4 and IPv6 special-purpose registries
 * (`range()`: loopback, private, linkLocal, carrierGradeNat, reserved (documentation, 192.0.0/24,
 * 198.18/15, 240/4), uniqueLocal, deprecatedSiteLocal, discard, 6to4, teredo, rfc6052, ...); only
 * 'unicast', i.e. in no special-purpose range, may be reached. ipaddr.js calls IPv6 outside those
 * tables 'unicast' even where IANA allocated nothing global, and it has no entry for the
 * deprecated IPv4-compatible form ::a.b.c.d (::/96, which some stacks still route to the embedded
 * IPv4 address, so [::127.0.0.1] would reach the loopback), hence two rules of our own:
 * `ipv4Compatible` (::/96) and `notGlobalUnicast` (outside 2000::/3, the only IPv6 space IANA
 * delegates for global unicast). Each refusal names its rule and the range it matched, so an
 * operator knows what to allowlist.
 */
const IPV4_COMPATIBLE: Range = [ipaddr.IPv6.parse('::'), 96];
const GLOBAL_UNICAST_V6: Range = [ipaddr.IPv6.parse('2000::'), 3];
/** The NAT64 well-known prefix (RFC 6052): globally reachable when the IPv4 address it embeds is. */
const NAT64_WKP: Range = [ipaddr.IPv6.parse('64:ff9b::'), 96];

export class AddressPolicy {
  private readonly hosts = new Set<string>();
  private readonly ranges: Range[] = [];

  constructor(allow: string[]) {
    for (const raw of allow) {
      const entry = raw.trim();
      if (!entry) continue;
      if (entry.includes('/')) this.ranges.push(ipaddr.parseCIDR(entry));
      else if (ipaddr.isValid(entry)) {
        const a = normalise(ipaddr.parse(entry));
        this.ranges.push([a, a.kind() === 'ipv4' ? 32 : 128]);
      } else this.hosts.add(entry.toLowerCase().replace(/\.$/, ''));
    }
  }

  hostAllowed(host: string): boolean {
    return this.hosts.has(host.toLowerCase().replace(/\.$/, ''));
  }

  /** Why an address may not be reached (naming the rule and the range it fell in), or null when it may. */
  refusal(address: string): string | null {
    let a: Addr;
    try {
      a = normalise(ipaddr.parse(address));
    } catch {
      return `${address} is not an IP address`;
    }
    if (this.ranges.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits))) return null;
    return nonGlobal(a, address);
  }
}

/** The rule a not-allowlisted address breaks, or null for a global unicast address. */
function nonGlobal(a: Addr, shown: string): string | null {
  const range = a.range();
  if (a.kind() === 'ipv6') {
    const v6 = a as ipaddr.IPv6;
    if (range === 'rfc6052' && v6.match(NAT64_WKP)) {
      // A DNS64 resolver on an IPv6-only network answers this for every IPv4 host: judge the host.
      const v4 = ipaddr.IPv4.parse(v6.parts.slice(6).map((p) => `${p >> 8}.${p & 0xff}`).join('.'));
      const inner = nonGlobal(v4, v4.toString());
      return inner && `${shown} is a NAT64 address (64:ff9b::/96) embedding ${inner}`;
    }
    if (range === 'unicast') {
      if (v6.match(IPV4_COMPATIBLE)) return `${shown} is an ipv4Compatible address (::/96, deprecated IPv4-compatible IPv6)`;
      if (!v6.match(GLOBAL_UNICAST_V6)) return `${shown} is a notGlobalUnicast address (outside 2000::/3)`;
      return null;
    }
  } else if (range === 'unicast') return null;
  return `${shown} is ${/^[aeiou]/i.test(range) ? 'an' : 'a'} ${range} address (${matchedRange(a, range)})`;
}

/** The CIDR of ipaddr.js's special range `name` that holds `a` (its tables list one or several). */
function matchedRange(a: Addr, name: string): string {
  const entry = (a as unknown as { SpecialRanges: Record<string, Range | Range[]> }).SpecialRanges[name];
  if (!entry) return name;
  const list = (Array.isArray(entry[0]) ? entry : [entry]) as Range[];
  const hit = list.find(([net, bits]) => a.match(net, bits));
  return hit ? `${hit[0].toString()}/${hit[1]}` : name;
}

/** IPv4-mapped IPv6 (::ffff:a.b.c.d) is judged as the IPv4 address it is. */
function normalise(a: Addr): Addr {
  return a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a;
}

export async function safeFetch(raw: string, opts: SafeFetchOptions): Promise<Buffer> {
  const policy = new AddressPolicy(opts.allow);
  const deadline = Date.now() + opts.totalTimeoutMs;
  let url = parseUrl(raw);
  for (let hop = 0; ; hop++) {
    const res = await fetchOnce(url, policy, opts, deadline);
    if (res.redirect === null) return res.body!;
    if (hop >= opts.maxRedirects) throw new FetchError('failed', `more than ${opts.maxRedirects} redirects`);
    url = parseUrl(res.redirect, url);
  }
}

function parseUrl(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw new FetchError('invalid-url', base ? 'a redirect points to an invalid URL' : 'not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchError('invalid-url', `${base ? 'a redirect to ' : ''}${url.protocol} URLs are not fetched; only http and https`);
  if (url.username || url.password) throw new FetchError('invalid-url', 'URLs with credentials are not fetched');
  return url;
}

/** Resolves the host once and checks every address; returns the one to pin the connection to. */
async function resolve(url: URL, policy: AddressPolicy, timeoutMs: number): Promise<{ address: string; family: number }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const hostAllowed = policy.hostAllowed(host);
  let addrs: dns.LookupAddress[];
  if (ipaddr.isValid(host)) addrs = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  else {
    let timer: NodeJS.Timeout | undefined;
    try {
      addrs = await Promise.race([
        dns.promises.lookup(host, { all: true, verbatim: true }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new FetchError('failed', `resolving ${host} timed out`)), timeoutMs);
        }),
      ]);
    } catch (e) {
      if (e instanceof FetchError) throw e;
      throw new FetchError('failed', `${host} could not be resolved (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    } finally {
      clearTimeout(timer);
    }
  }
  if (!addrs.length) throw new FetchError('failed', `${host} has no address`);
  if (!hostAllowed) {
    for (const a of addrs) {
      const why = policy.refusal(a.address);
      if (why) throw new FetchError('refused', `${host === a.address ? why : `${host} resolves to ${why}`}; only global addresses are fetched unless allowlisted (imageFetch allow)`);
    }
  }
  return addrs[0]!;
}

async function fetchOnce(url: URL, policy: AddressPolicy, opts: SafeFetchOptions, deadline: number): Promise<{ redirect: string | null; body?: Buffer }> {
  const remaining = () => deadline - Date.now();
  if (remaining() <= 0) throw new FetchError('failed', `timed out after ${opts.totalTimeoutMs} ms`);
  const pinned = await resolve(url, policy, Math.min(opts.connectTimeoutMs, remaining()));
  // The connection goes to the checked address whatever the host name resolves to now.
  const lookup: LookupFunction = (_host, o, cb) => {
    if ((o as dns.LookupAllOptions).all) (cb as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, [pinned]);
    else cb(null, pinned.address, pinned.family);
  };
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolvePromise, reject) => {
    let settled = false;
    const fail = (e: FetchError) => {
      if (settled) return;
      settled = true;
      clearTimeout(total);
      clearTimeout(connect);
      req.destroy();
      opts.signal?.removeEventListener('abort', onAbort);
      reject(e);
    };
    const done = (v: { redirect: string | null; body?: Buffer }) => {
      if (settled) return;
      settled = true;
      clearTimeout(total);
      clearTimeout(connect);
      opts.signal?.removeEventListener('abort', onAbort);
      resolvePromise(v);
    };
    const onAbort = () => fail(new FetchError('failed', 'the fetch was abandoned: its client left'));
    const req = mod.request(url, {
      method: 'GET',
      agent: false,
      lookup,
      headers: { accept: 'image/*', 'accept-encoding': 'identity', 'user-agent': 'damhub-image-fetch/1' },
    });
    const total = setTimeout(() => fail(new FetchError('failed', `timed out after ${opts.totalTimeoutMs} ms`)), remaining());
    const connect = setTimeout(() => fail(new FetchError('failed', `connecting to ${url.host} timed out after ${opts.connectTimeoutMs} ms`)), Math.min(opts.connectTimeoutMs, remaining()));
    req.on('socket', (s) => s.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connect)));
    req.on('error', (e) => fail(new FetchError('failed', `fetching ${url.host} failed (${(e as NodeJS.ErrnoException).code ?? e.message})`)));
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && status !== 304) {
        res.resume();
        const loc = res.headers.location;
        if (!loc) return fail(new FetchError('failed', `${url.host} answered ${status} without a Location`));
        req.destroy();
        return done({ redirect: loc });
      }
      if (status < 200 || status >= 300) {
        res.resume();
        return fail(new FetchError('failed', `${url.host} answered HTTP ${status}`));
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > opts.maxBytes) return fail(new FetchError('too-large', `${url.host} announces ${declared} bytes, over the limit of ${opts.maxBytes}`));
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > opts.maxBytes) return fail(new FetchError('too-large', `the image from ${url.host} is over the limit of ${opts.maxBytes} bytes`));
        chunks.push(c);
      });
      res.on('end', () => done({ redirect: null, body: Buffer.concat(chunks) }));
      res.on('error', () => fail(new FetchError('failed', `the connection to ${url.host} broke off`)));
      res.on('aborted', () => fail(new FetchError('failed', `the connection to ${url.host} broke off`)));
    });
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
    req.end();
  });
}
