import type { Middleware } from 'koa';
import type { AppUserService } from '../features/app-users/service.js';
import type { ConnectSessionService } from '../features/connect-sessions/service.js';
import type { IngestService } from '../features/clinical/ingest-service.js';
import type { LinkBuilder } from '../shared/http/links.js';
import type { OperationPatch } from '../shared/http/openapi.js';
import type { PatientService } from '../features/patients/service.js';
import type { WebhookEndpointService } from '../features/webhooks/service.js';
import type { WebhookDeliveryService } from '../features/webhooks/delivery-service.js';

/** What the platform surface's routes are given: services and the cross-cutting guards they share. */
export interface PlatformContext {
  patients: PatientService;
  webhookEndpoints: WebhookEndpointService;
  webhookDeliveries: WebhookDeliveryService;
  users: AppUserService;
  connectSessions: ConnectSessionService;
  ingest: IngestService;
  idempotent: () => Middleware & { openapi: OperationPatch };
  link: LinkBuilder;
}
