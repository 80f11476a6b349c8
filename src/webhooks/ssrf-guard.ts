// SSRF guard for subscriber URLs. A URL is accepted when it is http(s), carries no credentials, and every
// address its host resolves to is public; hosts named in WEBHOOK_ALLOWED_HOSTS skip the address check.
// One rule (isAllowedHost, addressProblem) runs when a subscription is made (checkWebhookUrl: the API
// and the CLI) and again at every connect (`lookup` and checkSendTarget, used by the sender), so a DNS
// answer that changes in between (rebinding) cannot redirect a delivery to an internal address. The CLI
// and the server read WEBHOOK_ALLOWED_HOSTS each from its own environment: every refusal names the
// setting, so a list set in one place only is found at once.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../errors.js';

/** Everything public IPv6 lives in 2000::/3 (global unicast); the rest is special-purpose or unassigned. */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
/** IPv4-compatible IPv6 (deprecated), which some stacks still route to the embedded IPv4 address. */
const IPV4_COMPATIBLE_V6 = ipaddr.IPv6.parseCIDR('::/96');

/** Why an address may not be a webhook target ("127.0.0.1 is a loopback address"), or undefined when it is public. */
export function addressProblem(address: string): string | undefined {
  const verdict = addressVerdict(address);
  return verdict === undefined ? undefined : `${address} ${verdict}`;
}

/** addressProblem without the address: "is a loopback address". */
function addressVerdict(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return 'is not an IP address';
  }
  // ::ffff:a.b.c.d reaches a.b.c.d: judge the IPv4 address it carries.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  if (range !== 'unicast') return `is a ${describeRange(range)} address`;
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.match(IPV4_COMPATIBLE_V6)) return 'is an IPv4-compatible IPv6 address';
    if (!v6.match(GLOBAL_UNICAST_V6)) return 'is not a global unicast IPv6 address';
  }
  return undefined;
}

/** Why `host`, resolved to `addresses`, may not be a target; undefined when every address is public. */
function hostProblem(host: string, addresses: readonly string[]): string | undefined {
  if (isIP(host)) return addressProblem(host);
  if (addresses.length === 0) return `${host} resolves to no address`;
  for (const a of addresses) {
    const verdict = addressVerdict(a);
    if (verdict) return `${host} resolves to ${a}, which ${verdict}`;
  }
  return undefined;
}

function describeRange(range: string): string {
  switch (range) {
    case 'unspecified': return 'unspecified (0.0.0.0/8 or ::)';
    case 'loopback': return 'loopback';
    case 'private': return 'private (RFC 1918)';
    case 'linkLocal': return 'link-local (including cloud metadata)';
    case 'carrierGradeNat': return 'carrier-grade NAT';
    case 'uniqueLocal': return 'unique-local (private IPv6, including cloud metadata)';
    case 'multicast': return 'multicast';
    case 'broadcast': return 'broadcast';
    default: return `special-purpose (${range})`;
  }
}

/** Lower case, IPv6 brackets removed, IP literals in canonical form, so allowlist entries compare exactly. */
export function normalizeHost(host: string): string {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  if (isIP(h)) {
    try {
      return ipaddr.parse(h).toString();
    } catch {
      return h;
    }
  }
  return h;
}

export function isAllowedHost(host: string, allowedHosts: readonly string[]): boolean {
  if (allowedHosts.length === 0) return false;
  const h = normalizeHost(host);
  return allowedHosts.some((a) => normalizeHost(a) === h);
}

function reject(reason: string): never {
  throw new AppError('WEBHOOK_URL_REJECTED', `The webhook URL is not allowed: ${reason}.`);
}

/** A refusal of an internal address, with the setting that would allow it. */
function rejectAddress(host: string, problem: string): never {
  const shown = host.includes(':') ? `[${host}]` : host;
  reject(
    `${problem}. To allow it, list ${shown} in WEBHOOK_ALLOWED_HOSTS, for the server too: it checks the address again before every delivery`,
  );
}

/**
 * What `plant-store webhook add` says when a URL passed only because its host is in this process's
 * WEBHOOK_ALLOWED_HOSTS: the server checks again with its own list.
 */
export function allowedHostNote(url: string, allowedHosts: readonly string[]): string | undefined {
  const { host } = parseTarget(url);
  if (!isAllowedHost(host, allowedHosts)) return undefined;
  return (
    `${host} is accepted because WEBHOOK_ALLOWED_HOSTS lists it. The server that sends the deliveries must list it ` +
    'in its own WEBHOOK_ALLOWED_HOSTS too; otherwise it refuses to connect and disables the subscription at the first delivery.'
  );
}

/** The checks that need no DNS: scheme, credentials, a host; returns the URL and its host (no brackets). */
function parseTarget(url: string): { parsed: URL; host: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    reject('it is not an absolute URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') reject(`the scheme must be http or https, not ${parsed.protocol.replace(/:$/, '')}`);
  if (parsed.username !== '' || parsed.password !== '') reject('it must not carry credentials (user:password@)');
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (host === '') reject('it has no host');
  return { parsed, host };
}

/**
 * Throws AppError WEBHOOK_URL_REJECTED unless the URL is http(s), has no credentials, and every address its
 * host resolves to is public. Hosts in `allowedHosts` (names or IP literals, case-insensitive) skip the
 * address check.
 */
export async function checkWebhookUrl(url: string, allowedHosts: readonly string[]): Promise<void> {
  const { host } = parseTarget(url);
  if (isAllowedHost(host, allowedHosts)) return;
  let addresses: LookupAddress[] = [];
  if (!isIP(host)) {
    try {
      addresses = await new Promise<LookupAddress[]>((resolve, rejectLookup) =>
        dnsLookup(host, { all: true, verbatim: true }, (err, list) => (err ? rejectLookup(err) : resolve(list))),
      );
    } catch (err) {
      reject(`its host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    if (addresses.length === 0) reject(`its host ${host} does not resolve`);
  }
  const problem = hostProblem(host, addresses.map((a) => a.address));
  if (problem) rejectAddress(host, isIP(host) ? problem : `its host ${problem}`);
}

/** The connect-time refusal, naming the setting of the server that refused. */
function refusal(host: string, problem: string): AddressRejectedError {
  return new AddressRejectedError(`refusing to connect: ${problem}, and this server's WEBHOOK_ALLOWED_HOSTS does not list ${host}`);
}

/** The error a connect-time check fails with (recorded as the attempt's error, then retried). */
export class AddressRejectedError extends Error {
  override name = 'AddressRejectedError';
  readonly code = 'EADDRREJECTED';
}

/**
 * Connect-time check of a target URL that needs no DNS: scheme, credentials, and an IP-literal host (Node
 * does not call `lookup` for those). Throws AddressRejectedError.
 */
export function checkSendTarget(url: string, allowedHosts: readonly string[]): URL {
  let target: { parsed: URL; host: string };
  try {
    target = parseTarget(url);
  } catch (err) {
    throw new AddressRejectedError((err as Error).message);
  }
  if (isIP(target.host) && !isAllowedHost(target.host, allowedHosts)) {
    const problem = hostProblem(target.host, []);
    if (problem) throw refusal(target.host, problem);
  }
  return target.parsed;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/http/https connects that resolves like dns.lookup, then refuses (with
 * AddressRejectedError) when any address is not public, unless the host is allowlisted. Handles both the
 * single-address form and `all: true` (used by Node's happy-eyeballs connect).
 */
export function createGuardedLookup(allowedHosts: readonly string[]) {
  return function guardedLookup(hostname: string, options: LookupOptions | number | LookupCallback, callback?: LookupCallback): void {
    let cb = callback;
    let opts: LookupOptions = {};
    if (typeof options === 'function') cb = options;
    else if (typeof options === 'number') opts = { family: options };
    else if (options) opts = options;
    const done = cb!;
    dnsLookup(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) return done(err, opts.all ? [] : '', undefined);
      if (addresses.length === 0) return done(new AddressRejectedError(`${hostname} resolved to no address`), opts.all ? [] : '');
      if (!isAllowedHost(hostname, allowedHosts)) {
        const problem = hostProblem(hostname, addresses.map((a) => a.address));
        if (problem) return done(refusal(hostname, problem), opts.all ? [] : '');
      }
      if (opts.all) return done(null, addresses);
      const first = addresses[0]!;
      done(null, first.address, first.family);
    });
  };
}

/** The guarded lookup without an allowlist. */
export const lookup = createGuardedLookup([]);
