import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

/** A well-formed incoming X-Request-Id is echoed; anything else gets a new one. */
export const requestIdFor = (incoming: string | undefined): string => (incoming !== undefined && WELL_FORMED.test(incoming) ? incoming : randomUUID());

/** Every response carries X-Request-Id. */
export function requestId(): Middleware {
  return async function requestIdMiddleware(ctx, next) {
    const id = requestIdFor(ctx.get('X-Request-Id'));
    ctx.state.requestId = id;
    ctx.set('X-Request-Id', id);
    await next();
  };
}
