// A Fetch-API-shaped function for requests Portico makes to servers its customers' users name through the catalog
// (health systems' authorization, token and FHIR servers): it goes through the one outbound policy
// (address-policy.ts: https to public addresses only, checked after DNS, at connect time) unless insecure
// destinations are allowed (development and tests: http and loopback too), follows no redirect, reads at most
// `maxBytes` of an answer, and stops when the caller's signal fires. With `stream`, the answer's body is handed
// over as it arrives and read only as fast as the caller reads it (a FHIR search page of many MiB is never held
// whole); otherwise it is read whole first. The OAuth client library takes it as its
// `customFetch`, so its requests meet the same policy as everything else Portico sends.
import http from 'node:http';
import https from 'node:https';
import { assertPublicHost, PublicHttpsAgent, RefusedAddressError } from './address-policy.js';

export interface PolicyFetchOptions {
  /** Development and tests only: admits http and any address. */
  allowInsecure: boolean;
  /** A larger answer fails the request. */
  maxBytes: number;
  /** Resolve at the answer's head, its body a stream read on demand (one chunk at a time). */
  stream?: boolean;
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

export function policyFetch({ allowInsecure, maxBytes, stream = false }: PolicyFetchOptions): PolicyFetch {
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
    return request(url, init, agent, maxBytes, stream);
  };
}

function request(
  url: URL,
  init: PolicyRequestInit,
  agent: http.Agent,
  maxBytes: number,
  stream: boolean,
): Promise<Response> {
  const body = init.body == null ? undefined : init.body instanceof URLSearchParams ? init.body.toString() : init.body;
  const headers = Object.fromEntries(new Headers(init.headers as ConstructorParameters<typeof Headers>[0]).entries());
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  // Said outright for a streamed answer (the agents keep connections alive anyway): a socket the server closes when it
  // has sent everything must not end while the reader is still behind. nock's passthrough (every test runs under it)
  // hands the close on before the data it holds, which Node's client then calls an aborted response.
  if (stream) headers['connection'] ??= 'keep-alive';
  const signal = init.signal ?? undefined;
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const transport = url.protocol === 'http:' ? http : https;
    const req = transport.request(url, { method: init.method ?? 'GET', headers, agent }, (res) => {
      if (stream) return resolve(streamed(url, req, res, maxBytes));
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
        resolve(new Response(bodyless(status) ? null : Buffer.concat(chunks), head(res)));
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

const bodyless = (status: number) => status === 204 || status === 304 || (status >= 100 && status < 200);

function head(res: http.IncomingMessage): ResponseInit {
  const status = res.statusCode ?? 502;
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return { status: status < 200 ? 502 : status, headers };
}

/** The answer with a body pulled from the socket chunk by chunk as the caller reads (no read-ahead beyond it). */
function streamed(url: URL, req: http.ClientRequest, res: http.IncomingMessage, maxBytes: number): Response {
  const init = head(res);
  if (bodyless(res.statusCode ?? 502)) {
    res.resume();
    return new Response(null, init);
  }
  const chunks = res[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let size = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: IteratorResult<Buffer>;
        try {
          next = await chunks.next();
        } catch (error) {
          controller.error(
            error instanceof OutboundError
              ? error
              : new OutboundError('network', `${url.host}: ${(error as Error).message}`),
          );
          return;
        }
        if (next.done) return controller.close();
        size += next.value.length;
        if (size > maxBytes) {
          const tooLarge = new OutboundError('too-large', `${url.host} answered more than ${maxBytes} bytes`);
          req.destroy(tooLarge);
          controller.error(tooLarge);
          return;
        }
        controller.enqueue(new Uint8Array(next.value.buffer, next.value.byteOffset, next.value.length));
      },
      cancel() {
        req.destroy();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, init);
}

function abortError(signal: AbortSignal): OutboundError {
  const reason = signal.reason as { name?: string } | undefined;
  return reason?.name === 'TimeoutError'
    ? new OutboundError('timeout', 'the request did not finish within its deadline')
    : new OutboundError('network', 'the request was aborted');
}
