// Credentialed hot reads answered straight on node:http, ahead of Koa: the lifecycle probe (SDKs poll it
// every second), the patient read, the webhook endpoint list, the observation gateway's search and the FHIR
// face's search of one record type. Each route's answer comes from the same function its Koa route calls; the
// fast path only authenticates, routes, reads a plain JSON body against the route's own schema, and writes. Anything it does not answer with a 200 or 304 — no or a bad
// credential, a missing scope, an unusual or invalid body, a denial, any error at all — falls through to
// Koa, which answers it again (with the body already read, rawBodyOf()) and owns every problem response and
// every denial log, so both paths give the same answers. Only a dependency that did not answer is not asked
// twice: Koa renders that failure (503) as it is (fastPathFailures()).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import type { KeyKind } from './keys.js';
import type { Authenticate, Principal } from './auth.js';
import type { ValidateFunction } from 'ajv';
import type { Representation } from './conditional.js';
import type { RequestObserver } from './observe.js';
import { requestIdOf } from './request-id.js';
import { parseJsonBody, plainBodyLength, rawBodyOf } from './validate.js';
import { unavailableDependency } from './problem-middleware.js';
import { answeredByDeadline } from './deadline.js';
import { PUBLISHABLE_CORS } from './cors.js';

/** What a route's answer is given. */
export interface KeyedRequest {
  principal: Principal;
  /** The path's parameters, decoded. */
  params: string[];
  /** The raw query string (no `?`). */
  query: string;
  /** The body, parsed and valid against the route's schema (POST routes). */
  body: unknown;
  ifNoneMatch: string | undefined;
  req: IncomingMessage;
  requestId: string;
}

export interface KeyedRoute {
  /** The Koa route it answers for: its method and path come from the router's own table (routeTable()). */
  operationId: string;
  kind: KeyKind;
  scope?: string;
  /**
   * Whether the fast path answers for these path parameters at all, decided before anything else (a route whose
   * template also matches paths its Koa router gives to other routes, such as `{base}/metadata`); default all.
   */
  accepts?: (params: string[]) => boolean;
  /**
   * A POST's JSON body: read only when plain (plainBodyLength()) and used only when the schema holds. The check
   * only decides (acceptAjv: it stops at the first problem); Koa describes what is wrong.
   */
  body?: { check: ValidateFunction; mediaTypes: string[]; maxBytes: number };
  /**
   * The answer, or undefined to let Koa answer (anything but a plain success). A body that is already bytes
   * is sent as they are, with the Content-Type of the answer's headers.
   */
  answer(request: KeyedRequest): Representation | undefined | Promise<Representation | undefined>;
}

/** A Koa route as its router registered it: `/api/sdk/v1/app-users/:appUserId/lifecycle`. */
export interface TableRoute {
  operationId: string;
  method: string;
  path: string;
}

/** A keyed route with its method, template (for metrics and logs) and path pattern, from the router's table. */
interface Resolved extends KeyedRoute {
  route: string;
  method: 'GET' | 'POST';
  /** Matches the path (no query string); its groups are the route's parameters. */
  pattern: RegExp;
}

function resolve(route: KeyedRoute, table: TableRoute[]): Resolved {
  const entry = table.find((t) => t.operationId === route.operationId);
  const method = entry?.method.toUpperCase();
  if (!entry || (method !== 'GET' && method !== 'POST'))
    throw new Error(`the fast path answers for ${route.operationId}, which no router serves by GET or POST`);
  const pattern = new RegExp(
    `^${entry.path
      .split('/')
      .map((segment) => (segment.startsWith(':') ? '([^/]+)' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('\\/')}$`,
  );
  return { ...route, route: entry.path, method, pattern };
}

export function keyedFastPath(
  keyedRoutes: KeyedRoute[],
  table: TableRoute[],
  authenticate: Authenticate,
  observer: RequestObserver,
) {
  const routes = keyedRoutes.map((route) => resolve(route, table));
  return function fastPath(req: IncomingMessage, res: ServerResponse, fallback: () => void): boolean {
    const url = req.url;
    if ((req.method !== 'GET' && req.method !== 'POST') || url === undefined) return false;
    const mark = url.indexOf('?');
    const path = mark < 0 ? url : url.slice(0, mark);
    for (const route of routes) {
      const match = route.method === req.method ? route.pattern.exec(path) : null;
      if (!match || (route.accepts && !route.accepts(match.slice(1).map(decodedOrRaw)))) continue;
      const started = performance.now();
      /** The deadline answered while the fast path worked: the 503 is what the client saw, counted here. */
      const late = (finishedAs: number) =>
        observer.record({
          method: route.method,
          route: route.route,
          status: 503,
          seconds: (performance.now() - started) / 1000,
          requestId: requestIdOf(req),
          finishedAs,
        });
      void serve(route, match.slice(1), mark < 0 ? '' : url.slice(mark + 1), req, res, authenticate, observer).then(
        (served) => {
          if (served) return;
          if (answeredByDeadline(req)) return late(0); // Koa would answer it: its answer would go nowhere
          fallback();
        },
        (error: unknown) => {
          if (answeredByDeadline(req)) return late(500); // the client has its 503; the late failure goes nowhere
          if (res.headersSent) return res.destroy();
          if (unavailableDependency(error)) failures.set(req, error);
          fallback();
        },
      );
      return true;
    }
    return false;
  };
}

/**
 * A dependency that did not answer the fast path (down, stalled, closed): Koa answers with its 503 at once
 * rather than asking the dependency again and waiting out its deadline a second time.
 */
const failures = new WeakMap<IncomingMessage, unknown>();

/** Koa middleware, after the problem middleware: rethrows the dependency failure the fast path met, if any. */
export function fastPathFailures(): Middleware {
  return async function fastPathFailure(ctx, next) {
    if (failures.has(ctx.req)) throw failures.get(ctx.req);
    await next();
  };
}

async function serve(
  route: Resolved,
  params: string[],
  query: string,
  req: IncomingMessage,
  res: ServerResponse,
  authenticate: Authenticate,
  observer: RequestObserver,
): Promise<boolean> {
  const started = performance.now();
  // The same check as the Koa routes' (auth.ts); any refusal is Koa's to answer.
  // Mostly answered at once, from the caches (auth.ts): then no promise is waited for.
  const outcome = authenticate(req.headers.authorization, route.kind);
  const principal = outcome instanceof Promise ? await outcome : outcome;
  if (typeof principal === 'string') return false;
  if (route.scope !== undefined && !principal.scopes.has(route.scope)) return false;
  let body: unknown;
  if (route.body) {
    const length = plainBodyLength(req, route.body.mediaTypes, route.body.maxBytes);
    if (length === undefined) return false;
    try {
      body = parseJsonBody(await rawBodyOf(req, route.body.maxBytes, length)); // not UTF-8 or not JSON: Koa's 400
    } catch {
      return false;
    }
    if (!route.body.check(body)) return false;
  }
  const requestId = requestIdOf(req);
  const answering = route.answer({
    principal,
    params: params.map((p) => decodeURIComponent(p)),
    query,
    body,
    ifNoneMatch: headerOf(req, 'if-none-match'),
    req,
    requestId,
  });
  const answer = answering instanceof Promise ? await answering : answering;
  if (!answer) return false;
  if (answeredByDeadline(req)) {
    observer.record({
      method: route.method,
      route: route.route,
      status: 503,
      seconds: (performance.now() - started) / 1000,
      requestId,
      credentialId: principal.keyId,
      finishedAs: answer.status,
    });
    return true;
  }
  const headers: Record<string, string | number> = {
    'X-Request-Id': requestId,
    ...(route.kind === 'pk' && PUBLISHABLE_CORS),
    ...answer.headers,
  };
  let payload: string | Buffer | undefined;
  if (answer.status === 200) {
    payload = Buffer.isBuffer(answer.body) ? answer.body : JSON.stringify(answer.body);
    headers['Content-Type'] ??= 'application/json; charset=utf-8';
    headers['Content-Length'] = Buffer.byteLength(payload);
  }
  res.writeHead(answer.status, headers);
  res.end(payload);
  observer.record({
    method: route.method,
    route: route.route,
    status: answer.status,
    seconds: (performance.now() - started) / 1000,
    requestId,
    credentialId: principal.keyId,
  });
  return true;
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** A path parameter decoded, or as it is when it is not valid percent-encoding (then Koa answers it). */
function decodedOrRaw(param: string): string {
  try {
    return decodeURIComponent(param);
  } catch {
    return param;
  }
}
