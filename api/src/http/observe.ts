// Access logs and Prometheus metrics by route template and status. Logs name the credential id, never a
// key, token, secret or header value.
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';

export function observe(logger: Logger, registry: Registry): Middleware {
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });

  return async function observeMiddleware(ctx, next) {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      const labels = { method: ctx.method, route: String(route), status: String(ctx.status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
      if (logger.isLevelEnabled('info')) {
        logger[ctx.status >= 500 ? 'warn' : 'info'](
          { requestId: ctx.state.requestId, method: ctx.method, route, status: ctx.status, ms: Math.round(seconds * 1e4) / 10, credentialId: ctx.state.principal?.keyId },
          'request',
        );
      }
    }
  };
}
