// Where Portico may send requests on a customer's or a source's behalf: the one server-side request forgery
// policy, used when a webhook URL is accepted, by every outbound connection (webhook deliveries, catalog
// sources, logos, favicons, endpoint health checks), and re-checked at connect time, after DNS, so a public
// name that resolves to 10.0.0.1 is refused too. Only global unicast addresses pass; ipaddr.js names every
// special-purpose range otherwise (loopback, private, link-local, metadata, 6to4, …), and process() unwraps
// IPv4-mapped IPv6 so every spelling of an address meets the same check. ipaddr.js calls whatever it has no
// name for "unicast", which in IPv6 includes ranges that are nobody's public address: the deprecated
// IPv4-compatible ::a.b.c.d (RFC 4291; some stacks and translators route it to the IPv4 address it embeds),
// the rest of ::/8 and every block IANA has not allocated. So an IPv6 address must also lie in 2000::/3, the
// only global unicast space there is, and there outside the ranges ipaddr.js names (6to4, Teredo,
// documentation, benchmarking, ORCHID, AS112, AMT, the IETF protocol assignments 2001::/23, 3fff::/20).
import dns, { type LookupAddress } from 'node:dns';
import type http from 'node:http';
import https from 'node:https';
import { isIP, Socket, type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import ipaddr from 'ipaddr.js';

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

/** True for a global unicast address; false for anything else, including text that is not an address. */
export function isPublicAddress(address: string): boolean {
  return rangeOf(address) === 'unicast';
}

/**
 * The address as sockets read it. IPv6 goes through the WHATWG URL parser first: ipaddr.js reads the text
 * "::a.b.c.d" as IPv4-mapped (::ffff:a.b.c.d), which it is not, and scoped addresses (fe80::1%eth0) are
 * refused there. IPv4 must be a plain dotted quad (URLs and resolvers never give another spelling).
 */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const version = isIP(address);
  if (version === 4) return ipaddr.IPv4.parse(address);
  if (version !== 6) return undefined;
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  return ipaddr.process(canonical);
}

/** The range an address belongs to ("loopback", "private", "non-global IPv6 (outside 2000::/3)", …), for messages. */
function rangeOf(address: string): string {
  const parsed = parseAddress(address);
  if (!parsed) return 'invalid';
  const range = parsed.range();
  if (parsed.kind() === 'ipv6' && range === 'unicast' && !(parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6))
    return 'non-global IPv6 (outside 2000::/3)';
  return range;
}

/** A connection refused by the policy: the host is, or resolves to, an address that is not public. */
export class RefusedAddressError extends Error {
  readonly code = 'ERR_REFUSED_ADDRESS';

  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(
      host === address
        ? `${address} is a ${rangeOf(address)} address`
        : `${host} resolves to ${address}, a ${rangeOf(address)} address`,
    );
    this.name = 'RefusedAddressError';
  }
}

/** The host of a URL without IPv6 brackets. */
export const bareHost = (hostname: string): string => (hostname.startsWith('[') ? hostname.slice(1, -1) : hostname);

/** Throws RefusedAddressError when `host` is an IP literal outside the policy; names pass (checked after DNS). */
export function assertPublicHost(host: string): void {
  const bare = bareHost(host);
  if (ipaddr.isValid(bare) && !isPublicAddress(bare)) throw new RefusedAddressError(bare, bare);
}

const NONE: ReadonlySet<string> = new Set();

/**
 * A DNS lookup for sockets that fails unless every address of the name is public: a name with one private
 * address among public ones is refused, so rebinding between the answers cannot reach inside.
 */
export function publicOnlyLookup(
  lookup: typeof dns.lookup = dns.lookup,
  admitted: ReadonlySet<string> = NONE,
): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.find((a) => !isPublicAddress(a.address) && !admitted.has(a.address));
      if (refused) return callback(new RefusedAddressError(hostname, refused.address), '', 0);
      if (options.all) return (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}

type ConnectCallback = (error: Error | null, socket: Duplex) => void;
type Connect = (options: http.ClientRequestArgs, callback?: ConnectCallback) => Duplex | null | undefined;

/** Checks IP-literal hosts (net skips the lookup for them) and puts the policy's lookup on every other. */
function guarded(connect: Connect, lookup: LookupFunction, admitted: ReadonlySet<string>): Connect {
  return (options, callback) => {
    const host = bareHost(options.host ?? options.hostname ?? '');
    if (isIP(host) !== 0 && !isPublicAddress(host) && !admitted.has(host)) {
      const socket = new Socket();
      const error = new RefusedAddressError(host, host);
      if (callback) {
        callback(error, socket);
        process.nextTick(() => socket.destroy());
      } else process.nextTick(() => socket.destroy(error));
      return socket;
    }
    return connect({ ...options, lookup }, callback);
  };
}

/**
 * An https agent that connects only to public addresses (checked at connect time, after DNS). There is no
 * http twin: plain http is admitted only where private destinations are too (development), without a filter.
 *
 * `admitted` names exact addresses to let through besides public ones. It exists for tests alone: a loopback
 * stub server (127.0.0.1) stands in for public hosts, so that the code under test runs through this agent,
 * and every other non-public address (127.0.0.2, 10.x, …) is still refused. Production never passes it.
 */
export class PublicHttpsAgent extends https.Agent {
  private readonly connectPublic: Connect;

  constructor(
    options: https.AgentOptions = {},
    lookup: typeof dns.lookup = dns.lookup,
    admitted: ReadonlySet<string> = NONE,
  ) {
    super(options);
    this.connectPublic = guarded(
      (o, cb) => super.createConnection(o, cb),
      publicOnlyLookup(lookup, admitted),
      admitted,
    );
  }

  override createConnection(options: https.RequestOptions, callback?: ConnectCallback): Duplex | null | undefined {
    return this.connectPublic(options, callback);
  }
}
