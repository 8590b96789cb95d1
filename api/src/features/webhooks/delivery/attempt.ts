// One delivery attempt over HTTP: POST with the Standard Webhooks headers, one deadline for the whole
// exchange, no redirects followed (a 3xx is a failure), at most 64 KiB of the answer read (and discarded),
// and the destination checked at connect time by the outbound policy (core/src/net/address-policy.ts) unless
// private destinations are allowed (development).
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { PublicHttpsAgent, RefusedAddressError } from '#core/net/address-policy.js';
import type dns from 'node:dns';

export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface AttemptRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

export type AttemptOutcome = 'succeeded' | 'http_error' | 'timeout' | 'network_error' | 'refused_address';

export interface AttemptResult {
  outcome: AttemptOutcome;
  /** The receiver's status, when it answered. */
  status: number | null;
  durationMs: number;
  /** Why it failed, in words for the attempt log (never the response body). */
  error: string | null;
  /** Retry-After of a 429 or 503, as received. */
  retryAfter: string | undefined;
}

export interface AttemptAgents {
  /** The agent for a destination (public-only unless private destinations are allowed); undefined: not allowed at all.
   * */
  agentFor(url: URL): http.Agent | undefined;
}

/**
 * Agents kept alive between attempts: deliveries to one receiver reuse connections. No cap on sockets per
 * host: many accounts' endpoints share a host (an integration platform's), and one account's hanging
 * endpoints must not hold the sockets the others need; the lanes and permits bound what is in flight.
 */
export function attemptAgents(allowPrivate: boolean, lookup?: typeof dns.lookup): AttemptAgents {
  const options = { keepAlive: true, maxSockets: Infinity, maxFreeSockets: 64 };
  const publicHttps = new PublicHttpsAgent(options, lookup);
  const anyHttps = new https.Agent(options);
  const anyHttp = new http.Agent(options);
  // Plain http exists only where private destinations are allowed (development), so it gets no filter.
  return {
    agentFor: (url) =>
      url.protocol === 'http:' ? (allowPrivate ? anyHttp : undefined) : allowPrivate ? anyHttps : publicHttps,
  };
}

export async function attemptDelivery(
  request: AttemptRequest,
  agents: AttemptAgents,
  timeoutMs: number,
): Promise<AttemptResult> {
  const started = performance.now();
  const done = (
    outcome: AttemptOutcome,
    status: number | null,
    error: string | null,
    retryAfter?: string,
  ): AttemptResult => ({
    outcome,
    status,
    durationMs: Math.round(performance.now() - started),
    error,
    retryAfter,
  });
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return done('network_error', null, 'the endpoint URL is not a URL');
  }
  const agent = url.protocol === 'https:' || url.protocol === 'http:' ? agents.agentFor(url) : undefined;
  if (!agent) return done('refused_address', null, `refused: ${url.protocol} destinations are not allowed`);

  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const transport = url.protocol === 'https:' ? https : http;
    const outgoing = transport.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      },
      (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) response.destroy(); // enough: the body is never looked at
        });
        const answered = () => {
          const retryAfter =
            status === 429 || status === 503 ? headerValue(response.headers['retry-after']) : undefined;
          finish(
            status >= 200 && status < 300
              ? done('succeeded', status, null)
              : done('http_error', status, `the endpoint answered ${status}`, retryAfter),
          );
        };
        response.on('end', answered);
        response.on('close', answered); // also when we stopped reading a large body
        response.on('error', answered);
      },
    );
    const timer = setTimeout(() => {
      outgoing.destroy();
      finish(done('timeout', null, `no complete answer within ${timeoutMs} ms`));
    }, timeoutMs);
    outgoing.on('error', (error: Error) => {
      if (error instanceof RefusedAddressError) finish(done('refused_address', null, `refused: ${error.message}`));
      else finish(done('network_error', null, networkError(error)));
    });
    outgoing.end(request.body);
  });
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The error's code and message, without anything a receiver controls beyond its address. */
function networkError(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ? `${code}: ${error.message}`.slice(0, 300) : error.message.slice(0, 300);
}
