// Webhook endpoints on the platform surface (docs/api.md, "Receiving webhooks"): create, read, list (with its
// node:http fast path), update and delete; and each endpoint's deliveries: the attempt log, recover, rotate-secret, test.
import type { Static } from '@sinclair/typebox';
import type { Context } from 'koa';
import { principalOf, requireScope, type Principal } from '../../shared/http/auth.js';
import type { KeyedRoute } from '../../shared/http/keyed-fast-path.js';
import type { LinkBuilder } from '../../shared/http/links.js';
import type { FieldError } from '../../shared/http/errors.js';
import {
  IF_NONE_MATCH,
  ifMatch,
  preconditionOf,
  sendRepresentation,
  strongEtag,
  type Representation,
} from '../../shared/http/conditional.js';
import { PRIVATE_NO_CACHE } from '../../shared/http/caching.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { IdParams } from '../../shared/http/schemas.js';
import { queryReader, validate } from '../../shared/http/validate.js';
import { endpointPath, presentAttempt, presentWebhookEndpoint, presentWebhookEndpointPage } from './presenter.js';
import type { WebhookEndpoint as Endpoint } from './store.js';
import {
  CreatedWebhookEndpoint,
  CreateWebhookEndpoint,
  DeliveriesQuery,
  DeliveryAttemptList,
  ListQuery,
  RecoverBody,
  RecoverResult,
  RotatedSecret,
  TestSent,
  UpdateWebhookEndpoint,
  WebhookEndpoint,
  WebhookEndpointList,
} from './schema.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import type { WebhookDeliveryService } from './delivery-service.js';
import type { WebhookEndpointService } from './service.js';

const tags = ['Webhook endpoints'];
const notFoundNote = "Another account's, deleted or unknown endpoint → 404.";

/** The list's one answer, for its Koa route and the node:http fast path (webhookFastRoutes()). */
async function listAnswer(
  webhookEndpoints: WebhookEndpointService,
  principal: Principal,
  { limit, cursor }: Static<typeof ListQuery>,
  link: LinkBuilder,
): Promise<Representation & { body: Buffer }> {
  const page = await webhookEndpoints.list(principal, limit, cursor);
  const self = new URLSearchParams({ limit: String(limit), ...(cursor !== undefined && { cursor }) });
  const json = presentWebhookEndpointPage(
    page.items,
    page.nextCursor,
    link(`/api/platform/v1/webhook-endpoints?${self.toString()}`),
    link,
  );
  return { status: 200, headers: LIST_HEADERS, body: Buffer.from(json) };
}

const LIST_HEADERS = { ...PRIVATE_NO_CACHE, 'Content-Type': 'application/json; charset=utf-8' };

/**
 * The list polled by dashboards, answered on the node:http fast path (shared/http/keyed-fast-path.ts) when its query
 * is valid; anything else (a bad limit or cursor) is the Koa route's to answer.
 */
export function webhookFastRoutes({
  webhookEndpoints,
  link,
}: {
  webhookEndpoints: WebhookEndpointService;
  link: LinkBuilder;
}): KeyedRoute[] {
  const readQuery = queryReader(ListQuery);
  return [
    {
      operationId: 'listWebhookEndpoints',
      kind: 'sk',
      scope: 'webhook:read',
      answer: ({ principal, query }) => {
        const errors: FieldError[] = [];
        const input = readQuery(query, errors);
        return errors.length > 0 ? Promise.resolve(undefined) : listAnswer(webhookEndpoints, principal, input, link);
      },
    },
  ];
}

export function webhookEndpointRoutes(
  api: ApiRouter,
  {
    webhookEndpoints,
    idempotent,
    link,
  }: { webhookEndpoints: WebhookEndpointService } & Pick<RouteGuards, 'idempotent' | 'link'>,
): void {
  const present = (ctx: Context, endpoint: Endpoint, status = 200, extra: { secret?: string } = {}) => {
    ctx.status = status;
    ctx.set('ETag', strongEtag(endpoint.version));
    ctx.set(PRIVATE_NO_CACHE);
    ctx.body = { ...presentWebhookEndpoint(endpoint, link), ...extra };
  };

  const create = validate({ body: CreateWebhookEndpoint });
  api.post(
    '/webhook-endpoints',
    {
      operationId: 'createWebhookEndpoint',
      summary: 'Create a webhook endpoint',
      description:
        'At most 100 live endpoints per account (409 `LIMIT_EXCEEDED`). The signing `secret` appears only in this response.',
      tags,
      responses: { 201: { description: 'Created.', schema: CreatedWebhookEndpoint, headers: ['ETag', 'Location'] } },
    },
    requireScope('webhook:write'),
    create,
    idempotent(),
    async (ctx) => {
      const endpoint = await webhookEndpoints.create(principalOf(ctx), create.get(ctx).body);
      present(ctx, endpoint, 201, { secret: endpoint.secret }); // the only response that shows the secret
      ctx.set('Location', link(endpointPath(endpoint.id)));
    },
  );

  const list = validate({ query: ListQuery });
  api.get(
    '/webhook-endpoints',
    {
      operationId: 'listWebhookEndpoints',
      summary: 'List webhook endpoints (newest first)',
      description:
        'Order `createdAt` desc, then `id` desc. Cursors are signed and bound to this list and account; a tampered, foreign or other-route cursor → 400. A walk through all pages returns every live endpoint exactly once, also while endpoints are being created.',
      tags,
      responses: { 200: { description: 'One page.', schema: WebhookEndpointList } },
    },
    requireScope('webhook:read'),
    list,
    async (ctx) => {
      const answer = await listAnswer(webhookEndpoints, principalOf(ctx), list.get(ctx).query, link);
      ctx.set(answer.headers);
      ctx.body = answer.body;
    },
  );

  const byId = validate({ params: IdParams });
  api.get(
    '/webhook-endpoints/:id',
    {
      operationId: 'getWebhookEndpoint',
      summary: 'Get a webhook endpoint',
      description: notFoundNote,
      tags,
      requestHeaders: [IF_NONE_MATCH],
      responses: {
        200: { description: 'The endpoint.', schema: WebhookEndpoint, headers: ['ETag'] },
        304: { description: 'Not modified (weak comparison); empty body.' },
      },
    },
    requireScope('webhook:read'),
    byId,
    async (ctx) => {
      const endpoint = await webhookEndpoints.get(principalOf(ctx), byId.get(ctx).params.id);
      sendRepresentation(
        ctx,
        strongEtag(endpoint.version),
        () => presentWebhookEndpoint(endpoint, link),
        PRIVATE_NO_CACHE,
      );
    },
  );

  const update = validate({
    params: IdParams,
    body: UpdateWebhookEndpoint,
    bodyMediaTypes: ['application/merge-patch+json'],
  });
  api.patch(
    '/webhook-endpoints/:id',
    {
      operationId: 'updateWebhookEndpoint',
      summary: 'Update a webhook endpoint (JSON merge patch)',
      description: `Mutable: url, eventTypes, description, status (ACTIVE or PAUSED). ${notFoundNote} Existence is checked before If-Match.`,
      tags,
      responses: { 200: { description: 'The endpoint after the change.', schema: WebhookEndpoint, headers: ['ETag'] } },
    },
    requireScope('webhook:write'),
    update,
    ifMatch(),
    idempotent(),
    async (ctx) => {
      const { params, body } = update.get(ctx);
      present(ctx, await webhookEndpoints.update(principalOf(ctx), params.id, body, preconditionOf(ctx)));
    },
  );

  api.delete(
    '/webhook-endpoints/:id',
    {
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint (soft)',
      description: `The endpoint leaves the list and frees its quota slot. ${notFoundNote} Existence is checked before If-Match.`,
      tags,
      responses: { 204: { description: 'Deleted.' } },
    },
    requireScope('webhook:write'),
    byId,
    ifMatch(),
    idempotent(),
    async (ctx) => {
      await webhookEndpoints.delete(principalOf(ctx), byId.get(ctx).params.id, preconditionOf(ctx));
      ctx.status = 204;
    },
  );
}

// Deliveries to one endpoint: the attempt log, recover, rotate-secret and test (docs/api.md, "Receiving webhooks").

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
