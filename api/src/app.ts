// createApp: the Koa middleware chain and the routers, and the node:http handler that puts the catalog's
// fast path in front of them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa from 'koa';
import type { Logger } from 'pino';
import type { Clock } from '#core/clock.js';
import type { Config } from './config.js';
import { createAuth, createAuthenticate } from './shared/http/auth.js';
import { Problem } from './shared/http/schemas.js';
import { createIdempotency } from './shared/http/idempotency.js';
import { WriteAdmission } from './shared/http/admission.js';
import { withRequestDeadline } from './shared/http/deadline.js';
import { linkBuilder } from './shared/http/links.js';
import { RequestObserver } from './shared/http/observe.js';
import { ApiRouter, buildOpenApi } from './shared/http/openapi.js';
import { problemMiddleware } from './shared/http/problem-middleware.js';
import { requestId } from './shared/http/request-id.js';
import { opsRoutes } from './features/ops/ops.routes.js';
import { catalogFastPath } from './features/catalog/fast-path.js';
import { lifecycleAnswer } from './features/app-users/lifecycle-answer.js';
import { patientAnswer } from './features/patients/answer.js';
import { fastPathFailures, keyedFastPath } from './shared/http/keyed-fast-path.js';
import { gatewayFastRoutes } from './features/clinical/sdk.routes.js';
import { recordFastRoutes } from './features/clinical/fhir-records.routes.js';
import { fhirFastRoutes } from './features/clinical/fhir.routes.js';
import { webhookFastRoutes } from './features/webhooks/platform.routes.js';
import { FHIR_PREFIX, fhirOutcomes, outcomeOf } from './features/clinical/fhir/fhir-outcomes.js';
import { isPublishablePath, PUBLISHABLE_CORS, publishableCors } from './shared/http/cors.js';
import {
  imageOriginsOf,
  isSignInPath,
  SIGN_IN_DEADLINE_MS,
  SIGN_IN_DEADLINE_PAGE,
} from './features/connections/index.js';
import { catalogCors } from './features/catalog/sdk.routes.js';
import { adminSurface } from './surfaces/admin.js';
import { platformSurface } from './surfaces/platform.js';
import { sdkSurface, type SdkContext } from './surfaces/sdk.js';
import type { Services } from './wiring.js';
import { PORTICO_VERSION } from '#core/version.js';
import { OPENAPI_NOTES } from './openapi-notes.js';
import { EVENT_WEBHOOK } from './features/webhooks/delivery/schema.js';

export interface AppDeps {
  config: Config;
  services: Services;
  clock: Clock;
  logger: Logger;
  version?: string;
}

export interface PorticoApp {
  app: Koa;
  /** The request listener for node:http: the catalog fast path, then Koa, under the request deadline. */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** Resolves once no write is at work: also those whose clients the request deadline answered. */
  writesDone: () => Promise<void>;
}

export function createApp({ config, services, clock, logger, version = PORTICO_VERSION }: AppDeps): PorticoApp {
  const app = new Koa({ proxy: true });
  const registry = services.registry;

  const lookup = (hash: string) => services.keys.findByHash(hash);
  const accountActive = async (accountId: string) => (await services.accounts.get(accountId))?.status === 'ACTIVE';
  const appActive = async (appId: string) => (await services.apps.get(appId))?.status === 'ACTIVE';
  // One credential check for the Koa routes and the node:http fast path.
  const authenticate = createAuthenticate(lookup, accountActive, appActive, {
    key: (hash) => services.keys.cachedByHash?.(hash),
    accountActive: (accountId) => {
      const account = services.accounts.cached?.(accountId);
      return account === undefined ? undefined : account?.status === 'ACTIVE';
    },
    appActive: (appId) => {
      const app = services.apps.cached?.(appId);
      return app === undefined ? undefined : app?.status === 'ACTIVE';
    },
  });
  const auth = createAuth(authenticate);
  // A write waits for its turn until half its request's deadline at most (deadline.ts), leaving the rest for its work.
  const admission = new WriteAdmission({
    limit: config.maxConcurrentWrites,
    maxWaitMs: Math.floor(config.requestTimeoutMs / 2),
    registry,
  });
  const idempotent = createIdempotency(services.idempotencyStore, clock, config.cursorSecret, { logger, admission });
  const link = linkBuilder(config.publicBaseUrl);

  const platform = platformSurface({
    patients: services.patientService,
    webhookEndpoints: services.webhookEndpointService,
    webhookDeliveries: services.webhookDeliveryService,
    users: services.users,
    connectSessions: services.connectSessions,
    linkTokens: services.linkTokens,
    ingest: services.ingest,
    connections: services.connections.lifecycle,
    syncs: services.connections.syncRequests,
    syncStates: services.connections.syncRequests,
    syncWorker: services.connections.syncRunner,
    accessLog: services.accessLog,
    portal: services.portal,
    publicBaseUrl: config.publicBaseUrl,
    trustProxy: config.trustProxy,
    requireKey: auth.requireKey,
    idempotent,
    link,
  });
  // The catalog's hottest reads never reach Koa (fast path), so the platform router matches first.
  const sdkContext: SdkContext = {
    catalogAnswers: services.catalogAnswers,
    catalogService: services.catalogService,
    sessions: services.connectSessions,
    users: services.users,
    gateway: services.gateway,
    recordSearch: services.recordSearch,
    launches: services.connections.launches,
    portal: services.portal,
    clock,
    connectImageOrigins: imageOriginsOf((key) => services.storage.publicUrl(key), config.publicBaseUrl),
    requireKey: auth.requireKey,
    idempotent,
    publicBaseUrl: config.publicBaseUrl,
    trustProxy: config.trustProxy,
  };
  const routers = [platform, sdkSurface(sdkContext)];
  if (config.adminToken !== undefined)
    routers.push(adminSurface(config.adminToken, { admin: services.admin, idempotent }));

  const ops = new ApiRouter('');
  let document: unknown;
  const openapi = () =>
    (document ??= buildOpenApi(
      [...routers, ops],
      { version, serverUrl: config.publicBaseUrl },
      Problem,
      OPENAPI_NOTES,
      [EVENT_WEBHOOK],
    ));
  opsRoutes(ops, services.readiness, registry, openapi);
  routers.push(ops);

  app.use(requestId());
  const observer = new RequestObserver(logger, registry);
  app.use(observer.middleware());
  app.use(problemMiddleware(logger));
  app.use(fhirOutcomes(logger));
  app.use(fastPathFailures());
  app.use(catalogCors());
  app.use(publishableCors());
  for (const { router } of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  const koa = app.callback();
  const fastPath = catalogFastPath(
    services.catalogAnswers,
    observer,
    routers.flatMap((router) => router.table()),
  );
  // The polled credentialed reads (the lifecycle probe and the patient profile: 304s above all, the webhook
  // endpoint list) and the observation gateway's search.
  const keyed = keyedFastPath(
    [
      {
        operationId: 'probeAppUserLifecycle',
        kind: 'pk',
        answer: ({ principal, params: [id], ifNoneMatch }) =>
          lifecycleAnswer(services.users, principal, id!, ifNoneMatch),
      },
      {
        operationId: 'getPatient',
        kind: 'sk',
        scope: 'patient:read',
        answer: ({ principal, params: [id], ifNoneMatch }) =>
          patientAnswer(services.patientService, principal, id!, ifNoneMatch, link),
      },
      ...gatewayFastRoutes(sdkContext),
      ...recordFastRoutes(sdkContext),
      ...fhirFastRoutes(sdkContext),
      ...webhookFastRoutes({ webhookEndpoints: services.webhookEndpointService, link }),
    ],
    routers.flatMap((router) => router.table()),
    authenticate,
    observer,
  );
  const handler = withRequestDeadline(
    (req, res) => void (fastPath(req, res) || keyed(req, res, () => void koa(req, res)) || koa(req, res)),
    {
      timeoutMs: config.requestTimeoutMs,
      logger,
      registry,
      // The 503 in the form each path's errors take: an OperationOutcome on the FHIR base, CORS for browsers.
      errorFor: (path, error) =>
        path.startsWith(FHIR_PREFIX)
          ? { contentType: 'application/fhir+json; charset=utf-8', body: JSON.stringify(outcomeOf(error)) }
          : isPublishablePath(path)
            ? { headers: { ...PUBLISHABLE_CORS } }
            : isSignInPath(path)
              ? SIGN_IN_DEADLINE_PAGE
              : undefined,
      // The sign-in's stops wait on the health system (discovery, the token exchange: 10 s each).
      timeoutFor: (path) => (isSignInPath(path) ? Math.max(SIGN_IN_DEADLINE_MS, config.requestTimeoutMs) : undefined),
    },
  );
  return { app, handler, writesDone: () => admission.idle() };
}
