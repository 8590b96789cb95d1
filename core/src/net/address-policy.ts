// Where Portico may send requests on a customer's or a source's behalf: the one server-side request forgery
// policy, used when a webhook URL is accepted, by every outbound connection (catalog sources, logos and
// favicons today; webhook deliveries when they are built), and re-checked at connect time, after DNS, so a public name that
// resolves to 10.0.0.1 is refused too. Only global unicast addresses pass; ipaddr.js names every
// special-purpose range otherwise (loopback, private, link-local, metadata, 6to4, …), and process() unwraps
// IPv4-mapped IPv6 so every spelling of an address meets the same check.
import dns, { type LookupAddress } from 'node:dns';
import type http from 'node:http';
import https from 'node:https';
import { isIP, Socket, type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import ipaddr from 'ipaddr.js';

/** True for a global unicast address; false for anything else, including text that is not an address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

/** The range an address belongs to ("loopback", "private", …), for messages. */
function rangeOf(address: string): string {
  return ipaddr.isValid(address) ? ipaddr.process(address).range() : 'invalid';
}

/** A connection refused by the policy: the host is, or resolves to, an address that is not public. */
export class RefusedAddressError extends Error {
  readonly code = 'ERR_REFUSED_ADDRESS';

  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(host === address ? `${address} is a ${rangeOf(address)} address` : `${host} resolves to ${address}, a ${rangeOf(address)} address`);
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

/**
 * A DNS lookup for sockets that fails unless every address of the name is public: a name with one private
 * address among public ones is refused, so rebinding between the answers cannot reach inside.
 */
export function publicOnlyLookup(lookup: typeof dns.lookup = dns.lookup): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.find((a) => !isPublicAddress(a.address));
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
function guarded(connect: Connect, lookup: LookupFunction): Connect {
  return (options, callback) => {
    const host = bareHost(options.host ?? options.hostname ?? '');
    if (isIP(host) !== 0 && !isPublicAddress(host)) {
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
 */
export class PublicHttpsAgent extends https.Agent {
  private readonly connectPublic: Connect;

  constructor(options: https.AgentOptions = {}, lookup: typeof dns.lookup = dns.lookup) {
    super(options);
    this.connectPublic = guarded((o, cb) => super.createConnection(o, cb), publicOnlyLookup(lookup));
  }

  override createConnection(options: https.RequestOptions, callback?: ConnectCallback): Duplex | null | undefined {
    return this.connectPublic(options, callback);
  }
}
