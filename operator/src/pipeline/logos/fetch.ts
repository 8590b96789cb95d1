// Getting artwork bytes: `data:` URLs decoded, `https:` URLs fetched through an SSRF-filtering agent that
// refuses private, loopback, link-local and meta addresses at connect time (after DNS, so a public name that
// resolves to 10.0.0.1 is refused too), with a byte limit, one deadline for the whole fetch including
// redirects, and a redirect limit. Redirects are followed by hand, each hop checked like the first.
// `https.request` is looked up on the module at call time (not imported by name), so test doubles see it.
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import ipaddr from 'ipaddr.js';
import { RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { LogoError } from './sniff.js';

export interface FetchLimits {
  /** Larger bodies are refused (artwork) or cut off (home pages scanned for icon links). */
  maxBytes: number;
  /** For the whole fetch, redirects included. */
  timeoutMs: number;
  maxRedirects: number;
}

export const DEFAULT_FETCH_LIMITS: Readonly<FetchLimits> = { maxBytes: 2 * 1024 * 1024, timeoutMs: 10_000, maxRedirects: 3 };

export const filteringAgent = new RequestFilteringHttpsAgent({ allowPrivateIPAddress: false, allowMetaIPAddress: false });

const USER_AGENT = 'Portico-catalog-operator (logo renderer)';
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface Fetched {
  bytes: Buffer;
  /** The URL that answered, after redirects: relative links in a page resolve against it. */
  url: URL;
}

/** Decodes a `data:` URL (base64 or percent-encoded); the declared media type is ignored (bytes are sniffed). */
export function decodeDataUrl(url: string, maxBytes = DEFAULT_FETCH_LIMITS.maxBytes): Buffer {
  const match = /^data:([^,]*?)(;base64)?,(.*)$/is.exec(url);
  if (!match) throw new LogoError('bad-data-url', 'malformed data: URL');
  // A base64 body decodes to 3/4 of its length: refuse what cannot fit before decoding it.
  if (match[3]!.length > (match[2] ? (maxBytes * 4) / 3 + 4 : maxBytes * 3)) throw new LogoError('too-large', `logo larger than ${maxBytes} bytes`);
  let body: Buffer;
  try {
    body = match[2] ? Buffer.from(match[3]!, 'base64') : Buffer.from(decodeURIComponent(match[3]!), 'utf8');
  } catch {
    throw new LogoError('bad-data-url', 'malformed percent-encoding in data: URL');
  }
  if (body.length > maxBytes) throw new LogoError('too-large', `logo larger than ${maxBytes} bytes`);
  return body;
}

/** Refuses what no request should be made for: other schemes, credentials, IP literals outside public unicast. */
function checkTarget(url: URL): void {
  if (url.protocol !== 'https:') throw new LogoError('not-https', `only https: URLs are fetched (got ${url.protocol})`);
  if (url.username !== '' || url.password !== '') throw new LogoError('not-https', 'URLs with credentials are not fetched');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(host)) {
    const address = ipaddr.process(host);
    if (address.range() !== 'unicast') throw new LogoError('refused-address', `${host} is a ${address.range()} address`);
  }
}

/** GET over https with the limits; follows redirects; 200 only. */
export async function fetchHttps(start: string | URL, limits: FetchLimits, options: { accept: string; truncate?: boolean }): Promise<Fetched> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), limits.timeoutMs);
  try {
    let url = new URL(start);
    for (let hop = 0; ; hop++) {
      checkTarget(url);
      const answer = await requestOnce(url, limits, options, controller.signal);
      if ('bytes' in answer) return { bytes: answer.bytes, url };
      if (hop >= limits.maxRedirects) throw new LogoError('too-many-redirects', `more than ${limits.maxRedirects} redirects`);
      url = new URL(answer.location, url);
    }
  } catch (error) {
    if (controller.signal.aborted) throw new LogoError('timeout', `fetch took longer than ${limits.timeoutMs} ms`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

function requestOnce(url: URL, limits: FetchLimits, options: { accept: string; truncate?: boolean }, signal: AbortSignal): Promise<{ bytes: Buffer } | { location: string }> {
  return new Promise((resolve, reject) => {
    const request = https.request(url, { method: 'GET', agent: filteringAgent, signal, headers: { accept: options.accept, 'user-agent': USER_AGENT } }, (response: IncomingMessage) => {
      const status = response.statusCode ?? 0;
      if (REDIRECTS.has(status)) {
        response.resume();
        const location = response.headers.location;
        return location ? resolve({ location }) : reject(new LogoError('http-status', `redirect ${status} without Location`));
      }
      if (status !== 200) {
        response.resume();
        return reject(new LogoError('http-status', `${url.host} answered ${status}`));
      }
      const declared = Number(response.headers['content-length'] ?? 0);
      if (declared > limits.maxBytes && !options.truncate) {
        request.destroy();
        return reject(new LogoError('too-large', `larger than ${limits.maxBytes} bytes (Content-Length ${declared})`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => resolve({ bytes: Buffer.concat(chunks) });
      response.on('data', (chunk: Buffer) => {
        if (size + chunk.length > limits.maxBytes) {
          if (options.truncate) chunks.push(chunk.subarray(0, limits.maxBytes - size));
          size = limits.maxBytes;
          request.destroy();
          return options.truncate ? done() : reject(new LogoError('too-large', `larger than ${limits.maxBytes} bytes`));
        }
        size += chunk.length;
        chunks.push(chunk);
      });
      response.on('end', done);
      response.on('error', (error) => reject(fetchError(error)));
      // A connection closed before the end of the body: refused, not waited on until the deadline.
      response.on('close', () => response.complete || size >= limits.maxBytes || reject(new LogoError('fetch-failed', 'the connection closed before the end of the body')));
    });
    request.on('error', (error) => reject(fetchError(error)));
    request.end();
  });
}

function fetchError(error: Error): LogoError {
  if (error instanceof LogoError) return error;
  // request-filtering-agent: "DNS lookup 10.0.0.1(…) is not allowed. Because, It is private IP address."
  if (/is not allowed/.test(error.message)) return new LogoError('refused-address', error.message);
  return new LogoError('fetch-failed', `fetch failed: ${error.message}`);
}

/** The bytes behind a logo reference: `data:` decoded, `https:` fetched; anything else refused. */
export async function loadArtwork(reference: string, limits: FetchLimits = DEFAULT_FETCH_LIMITS): Promise<Buffer> {
  if (/^data:/i.test(reference)) return decodeDataUrl(reference, limits.maxBytes);
  let url: URL;
  try {
    url = new URL(reference);
  } catch {
    throw new LogoError('not-https', 'the logo reference is not a URL');
  }
  return (await fetchHttps(url, limits, { accept: 'image/*' })).bytes;
}
