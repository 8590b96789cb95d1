import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a well-formed incoming X-Request-Id, else mints one; every response carries it. */
export function requestId(): Middleware {
  return async function requestIdMiddleware(ctx, next) {
    const incoming = ctx.get('X-Request-Id');
    const id = WELL_FORMED.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    ctx.set('X-Request-Id', id);
    await next();
  };
}
