// Which endpoints hear an event (delivery-runner.ts): the one it names, or the account's ACTIVE endpoints that
// subscribe to its type, less those a dispatcher that stopped part-way already reached; and whether an endpoint may
// still receive deliveries when its attempt comes.
import type { WebhookEndpoint, WebhookEndpointStore } from '../store.js';
import type { StoredEvent } from '../../events/index.js';
import { deliveryId, type DeliveryRepository } from './deliveries.js';

/** The endpoints an event goes to: the one it names, or the account's ACTIVE endpoints that subscribe to it. */
export async function targetsOf(
  endpoints: WebhookEndpointStore,
  event: Pick<StoredEvent, 'type' | 'customerAccountId' | 'targetEndpointId'>,
): Promise<WebhookEndpoint[]> {
  const live = await endpoints.allLive(event.customerAccountId);
  if (event.targetEndpointId) return live.filter((e) => e.id === event.targetEndpointId && e.status === 'ACTIVE');
  return live.filter(
    (e) => e.status === 'ACTIVE' && (e.eventTypes.includes('*') || (e.eventTypes as string[]).includes(event.type)),
  );
}

/** Those of `targets` the event has not reached: no attempt of it succeeded there, and no retry of it is queued. */
export async function unreached(
  deliveries: Pick<DeliveryRepository, 'history' | 'isQueued'>,
  eventId: string,
  targets: WebhookEndpoint[],
): Promise<WebhookEndpoint[]> {
  const reached = await Promise.all(
    targets.map(
      async (e) =>
        ((await deliveries.history(e.id, [eventId])).get(eventId)?.succeeded ?? false) ||
        (await deliveries.isQueued(deliveryId(eventId, e.id))),
    ),
  );
  return targets.filter((_, i) => !reached[i]);
}

/** The endpoint as it is now, if it may still receive deliveries. */
export async function currentEndpoint(
  endpoints: WebhookEndpointStore,
  endpoint: Pick<WebhookEndpoint, 'accountId' | 'id'>,
): Promise<WebhookEndpoint | null> {
  const now = await endpoints.readLive(endpoint.accountId, endpoint.id);
  return now?.status === 'ACTIVE' ? now : null;
}
