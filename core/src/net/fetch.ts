// GET over https on Portico's behalf (catalog source lists, logos, favicons, endpoint health): through the
// public-only agent (core/src/net/address-policy.ts: every connection, redirect hops included, goes only to
// public addresses, checked after DNS), with a byte limit, one deadline for the whole fetch including
// redirects, and a redirect limit. Redirects are followed by hand, each hop checked like the first.
// `https.request` is looked up on the module at call time (not imported by name), so test doubles see it.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import https from 'node:https';
import { assertPublicHost, PublicHttpsAgent, RefusedAddressError } from './address-policy.js';

export interface FetchLimits {
  /** Larger bodies are refused (or cut off with `truncate`). */
  maxBytes: number;
  /** For the whole fetch, redirects included. */
  timeoutMs: number;
  maxRedirects: number;
}

export interface FetchOptions {
  accept: string;
  /** Says who is asking: "Portico-catalog-operator (source lists)". */
  userAgent: string;
  /** Keep the first maxBytes of a larger body instead of refusing it (pages scanned for links). */
  truncate?: boolean;
  /** More request headers (the validators of a conditional request). */
  headers?: Record<string, string>;
  /** A public-only agent of the caller's own (its own socket limits); default: the shared one. */
  agent?: PublicHttpsAgent;
}

export type FetchFailure =
  'not-https' | 'refused-address' | 'timeout' | 'too-many-redirects' | 'http-status' | 'too-large' | 'fetch-failed';

/** Why a fetch failed, by a stable reason that callers count (`too-large`, `refused-address`, …). */
export class FetchError extends Error {
  constructor(
    readonly reason: FetchFailure,
    message: string,
    /** The socket's or TLS layer's error code behind a `fetch-failed` (ECONNREFUSED, CERT_HAS_EXPIRED, …). */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'FetchError';
  }
}

export interface Fetched {
  bytes: Buffer;
  /** The URL that answered, after redirects: relative links in a page resolve against it. */
  url: URL;
}

export interface FetchedResponse extends Fetched {
  /** The final answer's status (never a redirect); the body is read for 200 only. */
  status: number;
  headers: IncomingHttpHeaders;
}

export const publicHttpsAgent = new PublicHttpsAgent();

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Refuses what no request should be made for: other schemes, credentials, IP literals outside the policy. */
function checkTarget(url: URL): void {
  if (url.protocol !== 'https:')
    throw new FetchError('not-https', `only https: URLs are fetched (got ${url.protocol})`);
  if (url.username !== '' || url.password !== '')
    throw new FetchError('not-https', 'URLs with credentials are not fetched');
  try {
    assertPublicHost(url.hostname);
  } catch (error) {
    throw new FetchError('refused-address', (error as Error).message);
  }
}

/** GET over https with the limits; follows redirects; 200 only. */
export async function fetchHttps(start: string | URL, limits: FetchLimits, options: FetchOptions): Promise<Fetched> {
  const { status, bytes, url } = await fetchHttpsResponse(start, limits, options);
  if (status !== 200) throw new FetchError('http-status', `${url.host} answered ${status}`);
  return { bytes, url };
}

/**
 * GET over https with the limits; follows redirects; answers whatever final status the server gave (a 304 to a
 * conditional request, a 404), with the body of a 200 only.
 */
export async function fetchHttpsResponse(
  start: string | URL,
  limits: FetchLimits,
  options: FetchOptions,
): Promise<FetchedResponse> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), limits.timeoutMs);
  try {
    let url = new URL(start);
    for (let hop = 0; ; hop++) {
      checkTarget(url);
      const answer = await requestOnce(url, limits, options, controller.signal);
      if ('status' in answer) return { ...answer, url };
      if (hop >= limits.maxRedirects)
        throw new FetchError('too-many-redirects', `more than ${limits.maxRedirects} redirects`);
      url = new URL(answer.location, url);
    }
  } catch (error) {
    if (controller.signal.aborted) throw new FetchError('timeout', `fetch took longer than ${limits.timeoutMs} ms`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

type Answer = { status: number; headers: IncomingHttpHeaders; bytes: Buffer } | { location: string };

/**
 * One request. A kept-alive connection the server closed just as it was reused fails with ECONNRESET before any
 * answer: that request is sent once more on a fresh connection (Node's advice), not reported as a failure.
 */
function requestOnce(
  url: URL,
  limits: FetchLimits,
  options: FetchOptions,
  signal: AbortSignal,
  retryStale = true,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers, accept: options.accept, 'user-agent': options.userAgent };
    let answered = false;
    const request = https.request(
      url,
      { method: 'GET', agent: options.agent ?? publicHttpsAgent, signal, headers },
      (response: IncomingMessage) => {
        answered = true;
        const status = response.statusCode ?? 0;
        if (REDIRECTS.has(status)) {
          response.resume();
          const location = response.headers.location;
          return location
            ? resolve({ location })
            : reject(new FetchError('http-status', `redirect ${status} without Location`));
        }
        if (status !== 200) {
          // Drained, so a kept-alive connection can serve the next request, but never more than a body's limit
          // nor for longer than the fetch's own deadline (the caller's timer ends with the answer): a slow-drip
          // error page must not hold one of the host's few sockets for ever.
          let drained = 0;
          const drainDeadline = setTimeout(() => request.destroy(), limits.timeoutMs);
          drainDeadline.unref();
          response.on('close', () => clearTimeout(drainDeadline));
          response.on('data', (chunk: Buffer) => (drained += chunk.length) > limits.maxBytes && request.destroy());
          response.resume();
          return resolve({ status, headers: response.headers, bytes: Buffer.alloc(0) });
        }
        const declared = Number(response.headers['content-length'] ?? 0);
        if (declared > limits.maxBytes && !options.truncate) {
          request.destroy();
          return reject(
            new FetchError('too-large', `larger than ${limits.maxBytes} bytes (Content-Length ${declared})`),
          );
        }
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => resolve({ status, headers: response.headers, bytes: Buffer.concat(chunks) });
        response.on('data', (chunk: Buffer) => {
          if (size + chunk.length > limits.maxBytes) {
            if (options.truncate) chunks.push(chunk.subarray(0, limits.maxBytes - size));
            size = limits.maxBytes;
            request.destroy();
            return options.truncate
              ? done()
              : reject(new FetchError('too-large', `larger than ${limits.maxBytes} bytes`));
          }
          size += chunk.length;
          chunks.push(chunk);
        });
        response.on('end', done);
        response.on('error', (error) => reject(fetchError(error)));
        // A connection closed before the end of the body: refused, not waited on until the deadline.
        response.on(
          'close',
          () =>
            response.complete ||
            size >= limits.maxBytes ||
            reject(new FetchError('fetch-failed', 'the connection closed before the end of the body')),
        );
      },
    );
    request.on('error', (error: Error & { code?: string }) => {
      if (retryStale && !answered && request.reusedSocket && error.code === 'ECONNRESET' && !signal.aborted)
        resolve(requestOnce(url, limits, options, signal, false));
      else reject(fetchError(error));
    });
    request.end();
  });
}

function fetchError(error: Error): FetchError {
  if (error instanceof FetchError) return error;
  if (error instanceof RefusedAddressError) return new FetchError('refused-address', error.message);
  const code = (error as { code?: unknown }).code;
  return new FetchError('fetch-failed', `fetch failed: ${error.message}`, typeof code === 'string' ? code : undefined);
}
