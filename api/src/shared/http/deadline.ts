// The request deadline (PORTICO_REQUEST_TIMEOUT_MS): every request is answered within it. Each dependency call
// has a deadline of its own, but a request makes several, and a failed idempotent request asks the database
// once more whether its writes landed, so without this a client could wait several dependency deadlines. When
// the work is not done in time the client gets 503 SERVICE_UNAVAILABLE with Retry-After at once, whatever the
// database driver or the Redis client is still doing. The work is not cancelled: it may finish or not, and what
// it did is decided exactly as for a request whose server crashed (the idempotency record's recovery points,
// the outbox's staged events): a retry with the same Idempotency-Key meets 409 IDEMPOTENCY_KEY_IN_USE while
// the work still runs, then its outcome.
//
// The 503 is written on the connection itself, which is then closed, as server.ts answers what node:http
// refuses: the response object stays the work's, so the work goes on exactly as if it were still answering
// (Koa and the idempotency middleware read the status it sets from that object, and record its outcome from
// it), and what it finally writes goes nowhere. Work that has not started by then never starts: a write still
// waiting for its turn (admission.ts) is dropped, and may wait only until half the deadline has passed.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { AppError, problemOf } from './errors.js';
import { requestIdOf } from './request-id.js';

/** Seconds a client is asked to wait: the work it started is usually decided by then. */
export const DEADLINE_RETRY_AFTER_SECONDS = 2;

/** Headers the handler may have set that still hold for the 503 (CORS: a browser may read the answer). */
const KEPT_HEADERS = /^access-control-/;

export interface DeadlineOptions {
  timeoutMs: number;
  logger: Logger;
  registry: Registry;
  /**
   * The 503's body and headers where a path answers errors in its own form (the FHIR base: an OperationOutcome;
   * the publishable-key routes: CORS headers); undefined for problem details.
   */
  errorFor?: (
    path: string,
    error: AppError,
  ) => { contentType?: string; body?: string; headers?: Record<string, string> } | undefined;
  /** A longer deadline for a path whose work waits on a slower party (a health system's servers). */
  timeoutFor?: (path: string) => number | undefined;
}

/**
 * A request under its deadline, kept on the request itself under a symbol of this module's (request-id.ts does the
 * same): a WeakMap or WeakSet entry per request cost more than the timer (the collector does their upkeep).
 */
interface Watch {
  started: number;
  timeoutMs: number;
  timer: NodeJS.Timeout | undefined;
  /** The deadline wrote the 503: the handler's late outcome goes nowhere. */
  answered: boolean;
}
const WATCH = Symbol('deadline');
type Watched = IncomingMessage & { [WATCH]?: Watch };

/** Whether the deadline answered this request (its handler's late outcome went nowhere). */
export function answeredByDeadline(req: IncomingMessage): boolean {
  return (req as Watched)[WATCH]?.answered === true;
}

/** The latest moment (performance.now()) this request's write may start (half its deadline), if it runs under one. */
export function latestWriteStart(req: IncomingMessage): number | undefined {
  const watch = (req as Watched)[WATCH];
  return watch && watch.started + watch.timeoutMs / 2;
}

/** The response is done with (finished or its connection gone): its request's timer goes. One function for all. */
function release(this: ServerResponse): void {
  clearTimeout((this.req as Watched)[WATCH]?.timer);
}

/** The path of a request target: without its query string. */
const pathOf = (url: string): string => {
  const mark = url.indexOf('?');
  return mark < 0 ? url : url.slice(0, mark);
};

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** `handler`, with every request answered 503 when it has not started its response within `timeoutMs`. */
export function withRequestDeadline(
  handler: Handler,
  { timeoutMs: defaultTimeoutMs, logger, registry, errorFor, timeoutFor }: DeadlineOptions,
): Handler {
  const exceeded = new Counter({
    name: 'portico_request_deadline_exceeded_total',
    help: 'Requests answered 503 by the request deadline while their work went on.',
    registers: [registry],
  });
  function expire(req: Watched, res: ServerResponse, watch: Watch): void {
    // A response under way (headers sent) is left to finish; a connection the client dropped needs no answer;
    // and one that is still answering an earlier request on this connection (pipelining) is left to that.
    const socket = req.socket as Socket & { _httpMessage?: ServerResponse | null };
    if (
      res.headersSent ||
      res.writableEnded ||
      !socket.writable ||
      (socket._httpMessage != null && socket._httpMessage !== res)
    )
      return;
    watch.answered = true;
    exceeded.inc();
    const path = pathOf(req.url ?? '/');
    const requestId = requestIdOf(req);
    const outcome =
      req.headers['idempotency-key'] === undefined
        ? 'It may still complete: without an Idempotency-Key, read the resource to learn whether it did.'
        : 'It may still complete: a retry with the same Idempotency-Key answers with its outcome once it is decided.';
    const problem = new AppError(
      'SERVICE_UNAVAILABLE',
      `The request did not finish within ${watch.timeoutMs} ms. ${outcome}`,
      {},
      { 'Retry-After': String(DEADLINE_RETRY_AFTER_SECONDS) },
    );
    const own = errorFor?.(path, problem);
    const body = own?.body ?? JSON.stringify(problemOf(problem, path));
    const headers: Record<string, string | number> = {};
    for (const name of res.getHeaderNames()) if (KEPT_HEADERS.test(name)) headers[name] = String(res.getHeader(name));
    Object.assign(
      headers,
      own?.headers,
      {
        'X-Request-Id': requestId,
        'Content-Type': own?.contentType ?? 'application/problem+json',
        'Content-Length': Buffer.byteLength(body),
        Connection: 'close',
      },
      problem.headers,
    );
    const head = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    // Nothing more is read from the connection: a request pipelined behind this one would run with nobody to
    // answer. Closed once the answer is written: paused, it would never read the client's end of it (the
    // server keeps connections half-open), and the work's own response is never written (Koa sees the socket
    // unwritable), so nothing else would ever close it.
    socket.pause();
    socket.end(`HTTP/1.1 503 ${STATUS_CODES[503]}\r\n${head}\r\n${req.method === 'HEAD' ? '' : body}`, () =>
      socket.destroy(),
    );
    logger.warn(
      { requestId, method: req.method, ms: Math.round(performance.now() - watch.started) },
      'request deadline: answered 503; the work goes on and is settled like a crashed request',
    );
  }
  return function deadline(req: Watched, res) {
    const timeoutMs = (timeoutFor && timeoutFor(pathOf(req.url ?? '/'))) ?? defaultTimeoutMs;
    const watch: Watch = { started: performance.now(), timeoutMs, timer: undefined, answered: false };
    req[WATCH] = watch;
    watch.timer = setTimeout(expire, timeoutMs, req, res, watch);
    res.on('close', release);
    handler(req, res);
  };
}
