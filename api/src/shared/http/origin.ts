import type { IncomingHttpHeaders } from 'node:http';
import { badRequest } from './errors.js';

/** host[:port], a name or an IPv4 address, or a bracketed IPv6 address. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;

export interface Origin {
  origin: string;
  /** The request headers the origin was taken from: a response built on it varies on them. */
  vary: string[];
}

/**
 * Where absolute links point (docs/api.md, "The catalog search"): PUBLIC_BASE_URL; else the request's well-formed
 * Host (400 otherwise) and scheme, and X-Forwarded-Proto/-Host only when the deployment trusts its proxy.
 */
export function requestOrigin(
  publicBaseUrl: string | undefined,
  headers: IncomingHttpHeaders,
  encrypted: boolean,
  trustProxy = false,
): Origin {
  if (publicBaseUrl !== undefined) return { origin: publicBaseUrl, vary: [] };
  const first = (value: string | string[] | undefined) =>
    typeof value === 'string' ? value.split(',')[0]!.trim() : '';
  const forwardedProto = trustProxy ? first(headers['x-forwarded-proto']).toLowerCase() : '';
  const forwardedHost = trustProxy ? first(headers['x-forwarded-host']) : '';
  const proto = forwardedProto === 'http' || forwardedProto === 'https' ? forwardedProto : encrypted ? 'https' : 'http';
  const host = forwardedHost || headers.host;
  if (!host || !HOST.test(host))
    throw badRequest('The request names no valid host: send a Host header such as "api.example.com".', [
      { in: 'header', name: forwardedHost ? 'X-Forwarded-Host' : 'Host', detail: 'must be host[:port]' },
    ]);
  return {
    origin: `${proto}://${host}`,
    vary: trustProxy ? ['Host', 'X-Forwarded-Proto', 'X-Forwarded-Host'] : ['Host'],
  };
}

/**
 * The origin of a node:http request (its socket's TLS for the scheme). Fast paths resolve it before a read, so that a
 * request whose origin is refused (400) reads nothing: a read is recorded only when it is answered.
 */
export function nodeRequestOrigin(
  req: { headers: IncomingHttpHeaders; socket: unknown },
  publicBaseUrl: string | undefined,
  trustProxy: boolean,
): Origin {
  return requestOrigin(
    publicBaseUrl,
    req.headers,
    (req.socket as { encrypted?: boolean }).encrypted === true,
    trustProxy,
  );
}
