// A Fetch-API-shaped function for requests Portico makes to servers its customers' users name through the catalog
// (health systems' authorization, token and FHIR servers): it goes through the one outbound policy
// (address-policy.ts: https to public addresses only, checked after DNS, at connect time) unless insecure
// destinations are allowed (development and tests: http and loopback too), follows no redirect, reads at most
// `maxBytes` of an answer, and stops when the caller's signal fires. The OAuth client library takes it as its
// `customFetch`, so its requests meet the same policy as everything else Portico sends.
import http from 'node:http';
import https from 'node:https';
import { assertPublicHost, PublicHttpsAgent, RefusedAddressError } from './address-policy.js';

export interface PolicyFetchOptions {
  /** Development and tests only: admits http and any address. */
  allowInsecure: boolean;
  /** A larger answer fails the request. */
  maxBytes: number;
}

export interface PolicyRequestInit {
  method?: string;
  headers?: Record<string, string> | Headers | [string, string][];
  body?: string | URLSearchParams | Uint8Array | null;
  signal?: AbortSignal | null;
}

export type PolicyFetch = (url: string | URL, init?: PolicyRequestInit) => Promise<Response>;

/** Why a request was not made or not finished, in a stable word the caller records. */
export class OutboundError extends Error {
  constructor(
    readonly reason: 'refused' | 'timeout' | 'too-large' | 'network',
    message: string,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

const KEEP_ALIVE = { keepAlive: true, maxSockets: 64, maxFreeSockets: 16 };

export function policyFetch({ allowInsecure, maxBytes }: PolicyFetchOptions): PolicyFetch {
  const publicHttps = new PublicHttpsAgent(KEEP_ALIVE);
  const anyHttps = new https.Agent(KEEP_ALIVE);
  const anyHttp = new http.Agent(KEEP_ALIVE);
  return async (input, init = {}) => {
    const url = new URL(String(input));
    if (url.username !== '' || url.password !== '')
      throw new OutboundError('refused', 'URLs with credentials are refused');
    if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:'))
      throw new OutboundError('refused', `only https: URLs are fetched (got ${url.protocol})`);
    if (!allowInsecure) {
      try {
        assertPublicHost(url.hostname);
      } catch (error) {
        throw new OutboundError('refused', (error as Error).message);
      }
    }
    const agent = url.protocol === 'http:' ? anyHttp : allowInsecure ? anyHttps : publicHttps;
    return request(url, init, agent, maxBytes);
  };
}

function request(url: URL, init: PolicyRequestInit, agent: http.Agent, maxBytes: number): Promise<Response> {
  const body = init.body == null ? undefined : init.body instanceof URLSearchParams ? init.body.toString() : init.body;
  const headers = Object.fromEntries(new Headers(init.headers as ConstructorParameters<typeof Headers>[0]).entries());
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  const signal = init.signal ?? undefined;
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const transport = url.protocol === 'http:' ? http : https;
    const req = transport.request(url, { method: init.method ?? 'GET', headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          req.destroy(new OutboundError('too-large', `${url.host} answered more than ${maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        const status = res.statusCode ?? 502;
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value === undefined) continue;
          for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one);
        }
        const empty = status === 204 || status === 304 || (status >= 100 && status < 200);
        resolve(
          new Response(empty ? null : Buffer.concat(chunks), {
            status: status < 200 ? 502 : status,
            headers: responseHeaders,
          }),
        );
      });
      res.on('error', (error) =>
        reject(error instanceof OutboundError ? error : new OutboundError('network', `${url.host}: ${error.message}`)),
      );
    });
    const onAbort = () => req.destroy(abortError(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('close', () => signal?.removeEventListener('abort', onAbort));
    req.on('error', (error) => {
      if (error instanceof OutboundError) return reject(error);
      if (error instanceof RefusedAddressError) return reject(new OutboundError('refused', error.message));
      reject(new OutboundError('network', `${url.host}: ${(error as NodeJS.ErrnoException).code ?? error.message}`));
    });
    req.end(body);
  });
}

function abortError(signal: AbortSignal): OutboundError {
  const reason = signal.reason as { name?: string } | undefined;
  return reason?.name === 'TimeoutError'
    ? new OutboundError('timeout', 'the request did not finish within its deadline')
    : new OutboundError('network', 'the request was aborted');
}
