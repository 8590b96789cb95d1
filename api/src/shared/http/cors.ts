// CORS for the routes made for browsers that hold a publishable key (docs/api.md, "Calling from a browser"): the
// lifecycle probe and the initiate operation answer any origin, their preflights included, on the Koa routes and on
// the node:http fast path alike. A publishable key is public by design (it is shipped inside client apps), so an
// origin check would protect nothing. Secret-key routes send no CORS headers: a browser page must never hold them.
// (The public catalog has its own: features/catalog/sdk.routes.ts.)
import type { Middleware } from 'koa';

/** Sent with every answer of a publishable-key route, errors included (a browser may then read them). */
export const PUBLISHABLE_CORS: Readonly<Record<string, string>> = Object.freeze({
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'ETag, Retry-After, RateLimit, RateLimit-Policy, X-Request-Id',
});

/** The publishable-key routes, and the methods each serves. */
const ROUTES: readonly { path: RegExp; methods: string }[] = [
  { path: /^\/api\/sdk\/v1\/app-users\/[^/]+\/lifecycle$/, methods: 'GET, HEAD, OPTIONS' },
  { path: /^\/api\/sdk\/v1\/connect-sessions$/, methods: 'POST, OPTIONS' },
];

/** Whether `path` is a publishable-key route's (its answers carry PUBLISHABLE_CORS). */
export const isPublishablePath = (path: string): boolean => ROUTES.some((r) => r.path.test(path));

export function publishableCors(): Middleware {
  return async function publishableCorsMiddleware(ctx, next) {
    const route = ROUTES.find((r) => r.path.test(ctx.path));
    if (!route) {
      await next();
      return;
    }
    ctx.set(PUBLISHABLE_CORS);
    // A preflight: what the real request may carry. No key is asked for (browsers send none with a preflight).
    if (ctx.method === 'OPTIONS') {
      ctx.set('Access-Control-Allow-Methods', route.methods);
      ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, If-None-Match, Idempotency-Key');
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
      return;
    }
    await next();
  };
}
