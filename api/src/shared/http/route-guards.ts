// What a feature's routes are given besides its own services: the cross-cutting guards every surface shares.
// A routes module names the ones it uses (Pick<RouteGuards, ...>), so a surface's context is the sum of what its
// features ask for (docs/architecture.md, "Where a new feature goes").
import type { Middleware } from 'koa';
import type { Surface } from './auth.js';
import type { LinkBuilder } from './links.js';
import type { OperationPatch } from './openapi.js';

/** A middleware that also describes itself in /openapi.json. */
export type Documented = Middleware & { openapi: OperationPatch };

export interface RouteGuards {
  /** The Idempotency-Key middleware for a write (shared/http/idempotency.ts). */
  idempotent: () => Documented;
  /** Authentication for a route whose surface differs from its router's (shared/http/auth.ts). */
  requireKey: (surface: Surface) => Documented;
  /** `_links.self.href` of a resource. */
  link: LinkBuilder;
  /** PUBLIC_BASE_URL, when configured: absolute links in answers. */
  publicBaseUrl: string | undefined;
  /** Whether X-Forwarded-* headers are believed. */
  trustProxy: boolean;
}
