import type { IncomingHttpHeaders } from 'node:http';
import { badRequest } from './errors.js';

/** Where absolute links point: PUBLIC_BASE_URL, else the scheme and host the request was sent to. */
export function requestOrigin(publicBaseUrl: string | undefined, headers: IncomingHttpHeaders, encrypted: boolean): string {
  if (publicBaseUrl !== undefined) return publicBaseUrl;
  const forwardedProto = headers['x-forwarded-proto'];
  const proto = (typeof forwardedProto === 'string' ? forwardedProto.split(',')[0]!.trim() : '') || (encrypted ? 'https' : 'http');
  const forwardedHost = headers['x-forwarded-host'];
  const host = (typeof forwardedHost === 'string' ? forwardedHost.split(',')[0]!.trim() : '') || headers.host;
  if (!host) throw badRequest('The request names no host: send a Host header.', [{ in: 'header', name: 'Host', detail: 'is required' }]);
  return `${proto}://${host}`;
}
