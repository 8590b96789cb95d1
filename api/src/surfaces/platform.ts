// The platform surface, /api/platform/v1, for secret keys (sk_): it mounts each feature's platform routes, in the
// order /openapi.json lists them. Its context is what those routes ask for, nothing more.
import { accessLogRoutes } from '../features/access-log/platform.routes.js';
import { appUserRoutes } from '../features/app-users/platform.routes.js';
import { ingestRoutes } from '../features/clinical/platform.routes.js';
import { completeSessionRoute, linkTokenRoute } from '../features/connect-sessions/platform.routes.js';
import { patientRoutes } from '../features/patients/platform.routes.js';
import { portalSessionRoute } from '../features/portal/platform.routes.js';
import { revokeConnectionRoute, syncRoutes } from '../features/connections/platform.routes.js';
import { webhookDeliveryRoutes, webhookEndpointRoutes } from '../features/webhooks/platform.routes.js';
import { ApiRouter } from '../shared/http/openapi.js';
import type { RouteGuards } from '../shared/http/route-guards.js';

type DepsOf<F extends (router: ApiRouter, deps: never) => void> = Parameters<F>[1];

export type PlatformContext = DepsOf<typeof patientRoutes> &
  DepsOf<typeof webhookEndpointRoutes> &
  DepsOf<typeof webhookDeliveryRoutes> &
  DepsOf<typeof appUserRoutes> &
  DepsOf<typeof revokeConnectionRoute> &
  DepsOf<typeof linkTokenRoute> &
  DepsOf<typeof completeSessionRoute> &
  DepsOf<typeof ingestRoutes> &
  DepsOf<typeof syncRoutes> &
  DepsOf<typeof accessLogRoutes> &
  DepsOf<typeof portalSessionRoute> &
  Pick<RouteGuards, 'requireKey'>;

export function platformSurface(context: PlatformContext): ApiRouter {
  const platform = new ApiRouter('/api/platform/v1').use(context.requireKey('platform'));
  patientRoutes(platform, context);
  webhookEndpointRoutes(platform, context);
  webhookDeliveryRoutes(platform, context);
  appUserRoutes(platform, context);
  accessLogRoutes(platform, context);
  portalSessionRoute(platform, context);
  revokeConnectionRoute(platform, context);
  linkTokenRoute(platform, context);
  completeSessionRoute(platform, context);
  ingestRoutes(platform, context);
  syncRoutes(platform, context);
  return platform;
}
