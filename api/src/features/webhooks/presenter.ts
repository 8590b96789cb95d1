import { JsonMemo } from '../../shared/http/json-memo.js';
import type { LinkBuilder } from '../../shared/http/links.js';
import type { AttemptRecord } from './delivery/deliveries.js';
import type { WebhookEndpoint } from './store.js';
import type { WebhookEndpointView } from './schema.js';

export const endpointPath = (id: string) => `/api/platform/v1/webhook-endpoints/${id}`;

export function presentWebhookEndpoint(endpoint: WebhookEndpoint, link: LinkBuilder): WebhookEndpointView {
  return {
    id: endpoint.id,
    resourceType: 'WebhookEndpoint',
    url: endpoint.url,
    eventTypes: endpoint.eventTypes,
    ...(endpoint.description !== null && { description: endpoint.description }),
    status: endpoint.status,
    consecutiveFailures: endpoint.consecutiveFailures,
    lastDeliveryAttemptAt: endpoint.lastDeliveryAttemptAt?.toISOString() ?? null,
    lastSuccessfulDeliveryAt: endpoint.lastSuccessfulDeliveryAt?.toISOString() ?? null,
    createdAt: endpoint.createdAt.toISOString(),
    updatedAt: endpoint.updatedAt.toISOString(),
    _version: String(endpoint.version),
    _links: { self: { href: link(endpointPath(endpoint.id)) } },
  };
}

// Endpoint objects are shared from the account's cached list until a write replaces them, so list pages are
// assembled from each one's memoised JSON.
const endpointJson = new JsonMemo((endpoint: WebhookEndpoint, link: LinkBuilder) =>
  JSON.stringify(presentWebhookEndpoint(endpoint, link)),
);

/** The list envelope (docs/api.md, "Rules every operation follows") as JSON text. */
export function presentWebhookEndpointPage(
  items: WebhookEndpoint[],
  nextCursor: string | null,
  selfHref: string,
  link: LinkBuilder,
): string {
  const pagination = JSON.stringify({ nextCursor, hasMore: nextCursor !== null });
  return `{"data":[${items.map((e) => endpointJson.value(e, link)).join(',')}],"pagination":${pagination},"_links":${JSON.stringify({ self: { href: selfHref } })}}`;
}

/** One attempt of the attempt log, as `GET /webhook-endpoints/{id}/deliveries` shows it. */
export function presentAttempt(record: AttemptRecord) {
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
