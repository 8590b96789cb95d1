// Where webhooks may be sent: only absolute https URLs whose host is, and resolves only to, addresses the one
// outbound policy admits (core/src/net/address-policy.ts). WHATWG URL parsing already turns numeric host
// forms (0x7f.1, 2130706433, 0177.0.0.1) into dotted IPv4, so every spelling of an address meets the same
// check. Delivery checks again at connect time, through the same policy.
import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { bareHost, isPublicAddress } from '#core/net/address-policy.js';
import { invalidField, serviceUnavailable } from '../../shared/http/errors.js';

export const MAX_URL_LENGTH = 2048;
/** The lowest port a webhook URL may name besides 443. */
const MIN_PORT = 1024;
/** A lookup slower than this is a DNS problem, not the client's: 503. */
export const RESOLVE_TIMEOUT_MS = 3000;
/** Answers that say the name has no address (the client's URL is wrong); anything else is transient. */
const NO_SUCH_HOST = new Set(['ENOTFOUND', 'ENODATA', 'ENONAME', 'EAI_NONAME', 'EAI_NODATA']);

/** Resolves a host name to all of its addresses. */
export type Resolver = (host: string) => Promise<string[]>;

export const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

export interface UrlPolicy {
  /** PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: development and tests only. */
  allowPrivate: boolean;
  resolve: Resolver;
  /** Default RESOLVE_TIMEOUT_MS. */
  resolveTimeoutMs?: number;
}

/** What a refusal a developer meets with a local receiver says about the setting that admits one. */
const DEVELOPMENT_HINT =
  ' (a receiver on your own machine, in development: start the API with PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS=true, which admits http and private addresses)';

/** Checks a webhook URL and returns it normalised; 400 naming the `url` field when it is refused. */
export async function checkWebhookUrl(raw: string, policy: UrlPolicy): Promise<string> {
  const refuse = (detail: string) => invalidField('body', 'url', detail);
  if (raw.length > MAX_URL_LENGTH) throw refuse(`must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('must be an absolute URL');
  }
  const schemes = policy.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) throw refuse(`must use https${DEVELOPMENT_HINT}`);
  if (url.username || url.password) throw refuse('must not contain user information');
  if (url.hash) throw refuse('must not contain a fragment');
  if (url.hostname === '') throw refuse('must name a host');
  // Not a well-known service's port (ssh, smtp, …) on someone else's host: 443 or an unprivileged port.
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (port !== 443 && (port < MIN_PORT || port > 65_535))
    throw refuse(`must use port 443 or a port from ${MIN_PORT} to 65535`);
  const normalised = url.toString();
  if (normalised.length > MAX_URL_LENGTH) throw refuse(`must be at most ${MAX_URL_LENGTH} characters`);
  if (policy.allowPrivate) return normalised;

  const host = bareHost(url.hostname);
  if (ipaddr.isValid(host)) {
    if (!isPublicAddress(host))
      throw refuse(
        `must not point to a loopback, private, link-local, multicast or reserved address${DEVELOPMENT_HINT}`,
      );
    return normalised;
  }
  let addresses: string[];
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(Object.assign(new Error('DNS timeout'), { code: 'ETIMEOUT' })),
        policy.resolveTimeoutMs ?? RESOLVE_TIMEOUT_MS,
      );
    });
    addresses = await Promise.race([policy.resolve(host), timeout]);
  } catch (error) {
    if (NO_SUCH_HOST.has((error as { code?: string }).code ?? '')) throw refuse(`host "${host}" does not resolve`);
    throw serviceUnavailable('DNS');
  } finally {
    clearTimeout(timer);
  }
  if (addresses.length === 0) throw refuse(`host "${host}" does not resolve`);
  if (!addresses.every(isPublicAddress)) {
    throw refuse(
      `must not resolve to a loopback, private, link-local, multicast or reserved address${DEVELOPMENT_HINT}`,
    );
  }
  return normalised;
}
