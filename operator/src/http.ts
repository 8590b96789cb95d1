// The operator's HTTP side port, for the chart's probes and scraping: /healthz (the process answers),
// /readyz (readiness.ts: 200, or 503 naming the failing check, as JSON) and /metrics (Prometheus:
// shared/metrics.ts and process metrics).
import { createServer, type Server } from 'node:http';
import type { OperatorMetrics } from './shared/metrics.js';
import type { ReadinessResult } from './readiness.js';

export async function serveOperatorEndpoints(
  metrics: OperatorMetrics,
  host: string,
  port: number,
  readiness: () => Promise<ReadinessResult>,
): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res
        .writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' })
        .end('method not allowed\n');
    } else if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end('ok\n');
    } else if (path === '/readyz') {
      readiness().then(
        ({ ready, checks }) =>
          res
            .writeHead(ready ? 200 : 503, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' })
            .end(JSON.stringify({ status: ready ? 'ready' : 'not ready', checks })),
        () =>
          res
            .writeHead(503, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' })
            .end(JSON.stringify({ status: 'not ready' })),
      );
    } else if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(text),
        () => res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n'),
      );
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return server;
}
