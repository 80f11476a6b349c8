// SSRF guard for subscriber URLs. A URL is accepted when it is http(s), carries no credentials, and every
// address its host resolves to is public; hosts named in WEBHOOK_ALLOWED_HOSTS skip the address check,
// except that the cloud metadata and host addresses below are refused whatever the list says.
// A refusal at subscription time says the same for every address problem, so that the API is no oracle
// for internal DNS (which names exist, what they resolve to); the detail goes to the log and the CLI.
// One rule (isAllowedHost, addressProblem) runs when a subscription is made (checkWebhookUrl: the API
// and the CLI) and again at every connect (`lookup` and checkSendTarget, used by the sender), so a DNS
// answer that changes in between (rebinding) cannot redirect a delivery to an internal address. The CLI
// and the server read WEBHOOK_ALLOWED_HOSTS each from its own environment: every refusal names the
// setting, so a list set in one place only is found at once.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../errors/catalogue.js';

/** Everything public IPv6 lives in 2000::/3 (global unicast); the rest is special-purpose or unassigned. */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
/** IPv4-compatible IPv6 (deprecated), which some stacks still route to the embedded IPv4 address. */
const IPV4_COMPATIBLE_V6 = ipaddr.IPv6.parseCIDR('::/96');

/**
 * Instance metadata and host endpoints of the major clouds (docs/webhooks.md lists them with their owners).
 * Most also fall in a refused range; listed here they are refused even for a host in WEBHOOK_ALLOWED_HOSTS,
 * and 168.63.129.16, a public address, is refused at all.
 */
export const CLOUD_HOST_ADDRESSES: readonly string[] = [
  '169.254.169.254', // AWS, Google Cloud, Azure, Oracle Cloud, DigitalOcean, Hetzner, OpenStack: instance metadata
  '169.254.170.2', // AWS ECS task metadata and credentials
  '169.254.0.23', // Tencent Cloud metadata
  '169.254.42.42', // Scaleway metadata
  '100.100.100.200', // Alibaba Cloud metadata
  '192.0.0.192', // Oracle Cloud Classic metadata
  '168.63.129.16', // Azure host endpoint (WireServer: VM agent, DNS, health probes)
  'fd00:ec2::254', // AWS instance metadata over IPv6
  'fd20:ce::254', // Google Cloud metadata over IPv6
];
const CLOUD_HOSTS = new Set(CLOUD_HOST_ADDRESSES.map((a) => ipaddr.parse(a).toNormalizedString()));

/** Why an address may not be a webhook target ("127.0.0.1 is a loopback address"), or undefined when it is public. */
export function addressProblem(address: string): string | undefined {
  const verdict = addressVerdict(address);
  return verdict === undefined ? undefined : `${address} ${verdict}`;
}

/** The address as ipaddr.js parses it, IPv4-mapped IPv6 as the IPv4 address it reaches; undefined if none. */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return undefined;
  }
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed;
}

/** True for a cloud metadata or host address (CLOUD_HOST_ADDRESSES), in any notation. */
function isCloudHost(parsed: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return CLOUD_HOSTS.has(parsed.toNormalizedString());
}

const CLOUD_VERDICT = 'is a cloud metadata or host address';

/** addressProblem without the address: "is a loopback address". */
function addressVerdict(address: string): string | undefined {
  const parsed = parseAddress(address);
  if (!parsed) return 'is not an IP address';
  if (isCloudHost(parsed)) return CLOUD_VERDICT;
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

/** The one answer to every address problem: it names neither the addresses nor the resolver's error. */
export const ADDRESS_REFUSED_MESSAGE =
  'The webhook URL is not allowed: its host does not resolve to public addresses that this server may call. ' +
  "An internal host can be allowed with WEBHOOK_ALLOWED_HOSTS, in the server's settings and the CLI's.";

/**
 * A refusal of the URL's host or addresses: the API answers ADDRESS_REFUSED_MESSAGE, while `detail` says
 * what was found, for the log and for the CLI's operator.
 */
export class WebhookAddressRefusedError extends AppError {
  constructor(readonly detail: string) {
    super('WEBHOOK_URL_REJECTED', ADDRESS_REFUSED_MESSAGE);
  }
}

/** A refusal of an internal address, with the setting that would allow it. */
function rejectAddress(host: string, problem: string): never {
  const shown = host.includes(':') ? `[${host}]` : host;
  if (problem.endsWith(CLOUD_VERDICT)) throw new WebhookAddressRefusedError(`The webhook URL is not allowed: ${problem}, which is never allowed.`);
  throw new WebhookAddressRefusedError(
    `The webhook URL is not allowed: ${problem}. To allow it, list ${shown} in WEBHOOK_ALLOWED_HOSTS, for the server too: ` +
      'it checks the address again before every delivery.',
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
  if (isAllowedHost(host, allowedHosts)) {
    // An allowlisted name is resolved only at connect time, where cloud host addresses are refused too.
    const literal = isIP(host) ? parseAddress(host) : undefined;
    if (literal && isCloudHost(literal)) rejectAddress(host, `${host} ${CLOUD_VERDICT}`);
    return;
  }
  let addresses: LookupAddress[] = [];
  if (!isIP(host)) {
    try {
      addresses = await new Promise<LookupAddress[]>((resolve, rejectLookup) =>
        dnsLookup(host, { all: true, verbatim: true }, (err, list) => (err ? rejectLookup(err) : resolve(list))),
      );
    } catch (err) {
      throw new WebhookAddressRefusedError(
        `The webhook URL is not allowed: its host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`,
      );
    }
    if (addresses.length === 0) throw new WebhookAddressRefusedError(`The webhook URL is not allowed: its host ${host} does not resolve.`);
  }
  const problem = hostProblem(host, addresses.map((a) => a.address));
  if (problem) rejectAddress(host, isIP(host) ? problem : `its host ${problem}`);
}

/** Why an allowlisted host may still not be called: one of its addresses is a cloud host address. */
function cloudProblem(host: string, addresses: readonly string[]): string | undefined {
  for (const a of addresses) {
    const parsed = parseAddress(a);
    if (parsed && isCloudHost(parsed)) return a === host ? `${host} ${CLOUD_VERDICT}` : `${host} resolves to ${a}, which ${CLOUD_VERDICT}`;
  }
  return undefined;
}

/** The connect-time refusal, naming the setting of the server that refused. */
function refusal(host: string, problem: string): AddressRejectedError {
  if (problem.endsWith(CLOUD_VERDICT)) return new AddressRejectedError(`refusing to connect: ${problem}, which is never allowed`);
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
  if (isIP(target.host)) {
    const problem = isAllowedHost(target.host, allowedHosts) ? cloudProblem(target.host, [target.host]) : hostProblem(target.host, []);
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
      const found = addresses.map((a) => a.address);
      const problem = isAllowedHost(hostname, allowedHosts) ? cloudProblem(hostname, found) : hostProblem(hostname, found);
      if (problem) return done(refusal(hostname, problem), opts.all ? [] : '');
      if (opts.all) return done(null, addresses);
      const first = addresses[0]!;
      done(null, first.address, first.family);
    });
  };
}

/** The guarded lookup without an allowlist. */
export const lookup = createGuardedLookup([]);
