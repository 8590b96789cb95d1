// Access logs and Prometheus metrics by route template and status, for the Koa stack and the catalog fast
// path alike. Logs name the credential id, never a key, token, secret or header value.
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import { answeredByDeadline } from './deadline.js';

export interface ObservedRequest {
  method: string;
  route: string;
  status: number;
  seconds: number;
  requestId: string | undefined;
  credentialId?: string | undefined;
  /**
   * When the request deadline answered (status 503): what the work itself ended with, later (0: it had no answer
   * of its own yet, the fast path handing it to Koa; 500: it failed).
   */
  finishedAs?: number;
}

export class RequestObserver {
  private readonly latency: Histogram<'method' | 'route' | 'status'>;

  constructor(
    private readonly logger: Logger,
    registry: Registry,
  ) {
    this.latency = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by method, route template and status.',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
    // The request count is the histogram's own count of each series, copied when metrics are read: a second
    // metric updated on every request doubled what recording costs on the hottest paths.
    const latency = this.latency;
    new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by method, route template and status.',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
      async collect() {
        const { values } = await latency.get();
        // Reset and filled in one step: two reads of the metrics at once cannot both add to one reset.
        this.reset();
        for (const { metricName, labels, value } of values)
          if (metricName === 'http_request_duration_seconds_count') this.inc(labels, value);
      },
    });
  }

  record({ method, route, status, seconds, requestId, credentialId, finishedAs }: ObservedRequest): void {
    this.latency.observe({ method, route, status: String(status) }, seconds);
    if (this.logger.isLevelEnabled('info')) {
      this.logger[status >= 500 ? 'warn' : 'info'](
        { requestId, method, route, status, ms: Math.round(seconds * 1e4) / 10, credentialId, finishedAs },
        'request',
      );
    }
  }

  middleware(): Middleware {
    return async (ctx, next) => {
      const started = performance.now();
      try {
        await next();
      } finally {
        // Answered 503 by the request deadline: that is what the client saw; the work's own status is kept beside it.
        const late = answeredByDeadline(ctx.req);
        this.record({
          method: ctx.method,
          route: String((ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched'),
          status: late ? 503 : ctx.status,
          ...(late && { finishedAs: ctx.status }),
          seconds: (performance.now() - started) / 1000,
          requestId: ctx.state.requestId as string | undefined,
          credentialId: (ctx.state.principal as { keyId?: string } | undefined)?.keyId,
        });
      }
    };
  }
}
