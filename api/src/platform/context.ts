import type { Middleware } from 'koa';
import type { AppUserService } from '../app-users/service.js';
import type { ConnectSessionService } from '../sdk/connect-sessions/service.js';
import type { IngestService } from './clinical/service.js';
import type { LinkBuilder } from '../http/links.js';
import type { OperationPatch } from '../http/openapi.js';
import type { PatientService } from './patients/service.js';
import type { WebhookEndpointService } from './webhook-endpoints/service.js';
import type { WebhookDeliveryService } from './webhook-endpoints/delivery-service.js';

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
