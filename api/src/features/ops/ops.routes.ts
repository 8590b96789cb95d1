// Operations endpoints: liveness, readiness, Prometheus metrics and the OpenAPI document.
import type { Registry } from 'prom-client';
import { AppError } from '../../shared/http/errors.js';
import type { ApiRouter } from '../../shared/http/openapi.js';

export interface Readiness {
  /** Each named dependency and whether it answers now. */
  check(): Promise<Record<string, boolean>>;
}

export function opsRoutes(api: ApiRouter, readiness: Readiness, registry: Registry, openapi: () => unknown): void {
  const tags = ['Operations'];
  api.get(
    '/healthz',
    { operationId: 'healthz', summary: 'The process is alive', tags, responses: { 200: { description: 'Alive.' } } },
    async (ctx) => {
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { status: 'ok' };
    },
  );
  api.get(
    '/readyz',
    {
      operationId: 'readyz',
      summary: 'MongoDB (and Redis when configured) answer',
      tags,
      responses: { 200: { description: 'Ready.' }, 503: { description: 'A dependency is unreachable.' } },
    },
    async (ctx) => {
      const checks = await readiness.check();
      ctx.set('Cache-Control', 'no-store');
      if (!Object.values(checks).every(Boolean)) {
        const down = Object.keys(checks).filter((name) => !checks[name]);
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          `Not ready: ${down.join(', ')} unreachable.`,
          { checks },
          { 'Retry-After': '5' },
        );
      }
      ctx.body = { status: 'ready', checks };
    },
  );
  api.get(
    '/metrics',
    {
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      tags,
      responses: { 200: { description: 'Text exposition format.' } },
    },
    async (ctx) => {
      ctx.type = registry.contentType;
      ctx.body = await registry.metrics();
    },
  );
  api.get(
    '/openapi.json',
    { operationId: 'openapi', summary: 'This document', tags, responses: { 200: { description: 'OpenAPI 3.1.' } } },
    async (ctx) => {
      ctx.set('Cache-Control', 'public, max-age=300');
      ctx.body = openapi();
    },
  );
}
