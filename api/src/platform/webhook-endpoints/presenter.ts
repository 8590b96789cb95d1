import type { LinkBuilder } from '../../http/links.js';
import type { WebhookEndpoint } from './repository.js';
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

// Endpoint objects are shared from the account's cached list until a write replaces them, so each one's
// JSON is built once per link builder and list pages are assembled from those pieces.
const jsonMemo = new WeakMap<LinkBuilder, WeakMap<WebhookEndpoint, string>>();

function endpointJson(endpoint: WebhookEndpoint, link: LinkBuilder): string {
  let memo = jsonMemo.get(link);
  if (!memo) jsonMemo.set(link, (memo = new WeakMap()));
  let json = memo.get(endpoint);
  if (json === undefined) memo.set(endpoint, (json = JSON.stringify(presentWebhookEndpoint(endpoint, link))));
  return json;
}

/** The list envelope (seed §2.4) as JSON text. */
export function presentWebhookEndpointPage(items: WebhookEndpoint[], nextCursor: string | null, selfHref: string, link: LinkBuilder): string {
  const pagination = JSON.stringify({ nextCursor, hasMore: nextCursor !== null });
  return `{"data":[${items.map((e) => endpointJson(e, link)).join(',')}],"pagination":${pagination},"_links":${JSON.stringify({ self: { href: selfHref } })}}`;
}
