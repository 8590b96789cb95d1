// Deliveries to one endpoint: the attempt log, recover, rotate-secret and test (docs/api.md, "Receiving webhooks").
import { principalOf, requireScope } from '../../shared/http/auth.js';
import { ifMatch, preconditionOf, strongEtag } from '../../shared/http/conditional.js';
import { PRIVATE_NO_CACHE } from '../../shared/http/caching.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { IdParams } from '../../shared/http/schemas.js';
import { validate } from '../../shared/http/validate.js';
import { endpointPath } from './presenter.js';
import { DeliveriesQuery, DeliveryAttemptList, RecoverBody, RecoverResult, RotatedSecret, TestSent } from './schema.js';
import type { AttemptRecord } from './delivery/deliveries.js';
import type { WebhookEndpointService } from './service.js';
import type { WebhookDeliveryService } from './delivery-service.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';

const tags = ['Webhook endpoints'];
const notFoundNote = "Another account's, deleted or unknown endpoint → 404.";

function presentAttempt(record: AttemptRecord) {
  return {
    id: record.id,
    eventId: record.eventId,
    eventType: record.eventType,
    attempt: record.attempt,
    trigger: record.trigger,
    status: record.status,
    responseStatus: record.responseStatus,
    durationMs: record.durationMs,
    error: record.error,
    attemptedAt: record.attemptedAt?.toISOString() ?? null,
    nextAttemptAt: record.nextAttemptAt?.toISOString() ?? null,
  };
}

/** What the delivery routes are given. */
export type DeliveryRouteDeps = {
  webhookEndpoints: WebhookEndpointService;
  webhookDeliveries: WebhookDeliveryService;
} & Pick<RouteGuards, 'idempotent' | 'link'>;

export function webhookDeliveryRoutes(
  api: ApiRouter,
  { webhookEndpoints, webhookDeliveries, idempotent, link }: DeliveryRouteDeps,
): void {
  const log = validate({ params: IdParams, query: DeliveriesQuery });
  api.get(
    '/webhook-endpoints/:id/deliveries',
    {
      operationId: 'listWebhookDeliveries',
      summary: 'The attempt log of an endpoint (newest first)',
      description: `Every attempt to deliver an event to this endpoint in the last 30 days, and the attempts scheduled (PENDING), newest first; never the response body. Attempts are written in batches, so one appears here (and in the endpoint's \`lastDeliveryAttemptAt\`, \`lastSuccessfulDeliveryAt\` and \`consecutiveFailures\`) within about 100 ms of being made. A queued retry that stops because the endpoint was paused, disabled or deleted is recorded FAILED with an \`error\` beginning "not attempted". The cursor and limit rules are the endpoint list's. ${notFoundNote}`,
      tags,
      responses: { 200: { description: 'One page.', schema: DeliveryAttemptList } },
    },
    requireScope('webhook:read'),
    log,
    async (ctx) => {
      const { params, query } = log.get(ctx);
      const page = await webhookDeliveries.attempts(principalOf(ctx), params.id, query);
      const self = new URLSearchParams({
        limit: String(query.limit),
        ...(query.status && { status: query.status }),
        ...(query.cursor !== undefined && { cursor: query.cursor }),
      });
      ctx.set(PRIVATE_NO_CACHE);
      ctx.body = {
        data: page.items.map(presentAttempt),
        pagination: { nextCursor: page.nextCursor, hasMore: page.nextCursor !== null },
        _links: { self: { href: link(`${endpointPath(params.id)}/deliveries?${self.toString()}`) } },
      };
    },
  );

  const recover = validate({ params: IdParams, body: RecoverBody });
  api.post(
    '/webhook-endpoints/:id/recover',
    {
      operationId: 'recoverWebhookDeliveries',
      summary: 'Queue again the events an endpoint missed',
      description: `Every event since \`since\` (at most 14 days ago) that this endpoint should have received and did not — failed, or skipped while it was PAUSED or DISABLED — is queued again with its original \`webhook-id\` (trigger RECOVER). Events still on their way are left to arrive. The endpoint must be ACTIVE, else 409. One recover runs at a time per endpoint: another meanwhile is 409 \`CONFLICT\` with \`Retry-After\` (not replayed under its Idempotency-Key); and at most 10 run per endpoint an hour (a token bucket shared by replicas): past that, 429 \`RATE_LIMITED\` with \`Retry-After\`, \`RateLimit-Policy\` and \`RateLimit\`. ${notFoundNote}`,
      tags,
      responses: { 202: { description: 'Queued.', schema: RecoverResult } },
    },
    requireScope('webhook:write'),
    recover,
    idempotent(),
    async (ctx) => {
      const { params, body } = recover.get(ctx);
      ctx.status = 202;
      ctx.body = await webhookDeliveries.recover(principalOf(ctx), params.id, new Date(body.since));
    },
  );

  const byId = validate({ params: IdParams });
  api.post(
    '/webhook-endpoints/:id/rotate-secret',
    {
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate the signing secret',
      description: `The new secret signs from now on; the previous one keeps signing beside it for 24 hours (\`webhook-signature\` then holds both, space-separated: \`v1,<new> v1,<old>\`), so receivers switch without losing a delivery. The endpoint's \`_version\` moves on. ${notFoundNote}`,
      tags,
      responses: { 200: { description: 'The new secret, shown only here.', schema: RotatedSecret, headers: ['ETag'] } },
    },
    requireScope('webhook:write'),
    byId,
    ifMatch(),
    idempotent(),
    async (ctx) => {
      const { endpoint, secret } = await webhookEndpoints.rotateSecret(
        principalOf(ctx),
        byId.get(ctx).params.id,
        preconditionOf(ctx),
      );
      ctx.set('ETag', strongEtag(endpoint.version));
      ctx.set(PRIVATE_NO_CACHE);
      ctx.body = { secret };
    },
  );

  api.post(
    '/webhook-endpoints/:id/test',
    {
      operationId: 'testWebhookEndpoint',
      summary: 'Send a test event',
      description: `Sends a \`webhook.test\` event (\`data: {webhookEndpointId}\`) to this endpoint alone, whatever its \`eventTypes\`, through the usual delivery path (signed, retried, in the attempt log with trigger MANUAL). The endpoint must be ACTIVE, else 409. At most 10 test events per endpoint a minute: past that, 429 \`RATE_LIMITED\` with \`Retry-After\`, \`RateLimit-Policy\` and \`RateLimit\`. ${notFoundNote}`,
      tags,
      responses: { 202: { description: 'Queued for delivery.', schema: TestSent } },
    },
    requireScope('webhook:write'),
    byId,
    idempotent(),
    async (ctx) => {
      ctx.status = 202;
      ctx.body = await webhookDeliveries.sendTest(principalOf(ctx), byId.get(ctx).params.id);
    },
  );
}
