import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';

const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

/** A well-formed incoming X-Request-Id is echoed; anything else gets a new one. */
export const requestIdFor = (incoming: string | undefined): string =>
  incoming !== undefined && WELL_FORMED.test(incoming) ? incoming : randomUUID();

// Kept on the request itself under a symbol of this module's: a WeakMap entry per request cost more than the rest of
// this function (its upkeep falls on the garbage collector), and the id lives exactly as long as the request.
const ASSIGNED = Symbol('requestId');
type Identified = IncomingMessage & { [ASSIGNED]?: string };

/** The request's id, the same wherever it is asked for (the fast paths, Koa, the request deadline). */
export function requestIdOf(req: Identified): string {
  let id = req[ASSIGNED];
  if (id === undefined) {
    const incoming = req.headers['x-request-id'];
    req[ASSIGNED] = id = requestIdFor(Array.isArray(incoming) ? incoming.join(', ') : incoming);
  }
  return id;
}

/** Every response carries X-Request-Id. */
export function requestId(): Middleware {
  return async function requestIdMiddleware(ctx, next) {
    const id = requestIdOf(ctx.req);
    ctx.state.requestId = id;
    ctx.set('X-Request-Id', id);
    await next();
  };
}
