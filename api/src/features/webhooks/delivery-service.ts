// What customers do with deliveries to one of their endpoints: read the attempt log, send a test event, and
// recover what an endpoint missed (while failing, PAUSED or DISABLED) by queueing those events again with
// their original ids.
import type { Clock } from '#core/clock.js';
import {
  deliveryId,
  newAttemptId,
  type AttemptRecord,
  type AttemptStatus,
  type DeliveryStore,
  type QueuedDelivery,
} from './delivery/deliveries.js';
import {
  TEST_EVENT_TYPE,
  type DomainEvent,
  type EventQueue,
  type EventOutbox,
  type WorkSignals,
} from '../events/index.js';
import type { Principal } from '../../shared/http/auth.js';
import type { CursorCodec } from '../../shared/http/cursor.js';
import { AppError, invalidField, notFound } from '../../shared/http/errors.js';
import type { EndpointOperationLimits } from './operation-limits.js';
import type { WebhookEndpoint, WebhookEndpointStore } from './store.js';

const LOG_ROUTE = 'webhook-endpoints.deliveries';
/** Events read per page by recover. */
const RECOVER_PAGE = 500;
/** How far back recover reaches (events are kept a little longer). */
export const RECOVER_WINDOW_MS = 14 * 24 * 3_600_000;

export interface WebhookDeliveryServiceDeps {
  endpoints: WebhookEndpointStore;
  deliveries: Pick<DeliveryStore, 'list' | 'enqueue' | 'history'>;
  /** Where test events go. */
  outbox: Pick<EventOutbox, 'event' | 'append'>;
  /** The dispatched events recover reads. */
  events: Pick<EventQueue, 'since'>;
  signals: Pick<WorkSignals, 'announce'>;
  cursors: CursorCodec;
  clock: Clock;
  /** Recover one at a time and 10 an hour, test 10 a minute, per endpoint. */
  limits: Pick<EndpointOperationLimits, 'recover' | 'test'>;
}

export interface AttemptLogPage {
  items: AttemptRecord[];
  nextCursor: string | null;
}

export class WebhookDeliveryService {
  constructor(private readonly deps: WebhookDeliveryServiceDeps) {}

  /** The endpoint's attempt log, newest first, in pages. */
  async attempts(
    principal: Principal,
    id: string,
    query: { limit: number; cursor?: string; status?: AttemptStatus },
  ): Promise<AttemptLogPage> {
    await this.endpoint(principal, id);
    const binding = { route: LOG_ROUTE, accountId: principal.accountId };
    let before: string | undefined;
    if (query.cursor !== undefined) {
      const position = this.deps.cursors.decode(binding, query.cursor);
      if (position.e !== id || !position.i || (position.s ?? '') !== (query.status ?? ''))
        throw invalidField('query', 'cursor', 'is not a cursor issued for this list');
      before = position.i;
    }
    const page = await this.deps.deliveries.list(principal.accountId, id, {
      limit: query.limit,
      ...(query.status && { status: query.status }),
      ...(before && { before }),
    });
    const last = page.items.at(-1);
    const nextCursor =
      page.hasMore && last ? this.deps.cursors.encode(binding, { e: id, i: last.id, s: query.status ?? '' }) : null;
    return { items: page.items, nextCursor };
  }

  /** Sends a `webhook.test` event to this endpoint alone, through the usual delivery path. */
  async sendTest(principal: Principal, id: string): Promise<{ eventId: string }> {
    const endpoint = await this.activeEndpoint(principal, id, 'only an ACTIVE endpoint receives a test event');
    await this.deps.limits.test(principal.accountId, endpoint.id);
    const event: DomainEvent = {
      ...this.deps.outbox.event(TEST_EVENT_TYPE, principal.accountId, `webhook_endpoint:${endpoint.id}`, {
        webhookEndpointId: endpoint.id,
      }),
      targetEndpointId: endpoint.id,
    };
    await this.deps.outbox.append([event]);
    return { eventId: event.id };
  }

  /**
   * Queues again, with their original ids, the events since `since` (at most 14 days ago) that this endpoint
   * should have received and did not: failed, or skipped while it was PAUSED or DISABLED. Events still on
   * their way are left to arrive. Returns how many are queued.
   */
  async recover(principal: Principal, id: string, since: Date): Promise<{ events: number }> {
    const now = this.deps.clock.now();
    if (since.getTime() < now.getTime() - RECOVER_WINDOW_MS)
      throw invalidField('body', 'since', 'must be at most 14 days ago');
    if (since > now) throw invalidField('body', 'since', 'must not be in the future');
    const endpoint = await this.activeEndpoint(
      principal,
      id,
      'only an ACTIVE endpoint can recover events; set its status to ACTIVE first',
    );
    return this.deps.limits.recover(principal.accountId, endpoint.id, () =>
      this.requeue(principal, endpoint, since, now),
    );
  }

  /** recover's work: every missed event since `since` queued again. */
  private async requeue(
    principal: Principal,
    endpoint: WebhookEndpoint,
    since: Date,
    now: Date,
  ): Promise<{ events: number }> {
    // Nothing from before the endpoint existed; read in pages, so a busy account's fortnight is never in memory at
    // once.
    const from = since > endpoint.createdAt ? since : endpoint.createdAt;
    let queued = 0;
    for (let after: { occurredAt: Date; id: string } | undefined; ;) {
      const page = await this.deps.events.since(principal.accountId, from, RECOVER_PAGE, after);
      if (page.length === 0) break;
      after = { occurredAt: page.at(-1)!.occurredAt, id: page.at(-1)!.id };
      const events = page.filter((e) => wants(endpoint, e));
      const history = await this.deps.deliveries.history(
        endpoint.id,
        events.map((e) => e.id),
      );
      const deliveries: QueuedDelivery[] = events
        .filter((e) => !history.get(e.id)?.succeeded)
        .map((event) => ({
          id: deliveryId(event.id, endpoint.id),
          accountId: principal.accountId,
          endpointId: endpoint.id,
          eventId: event.id,
          eventType: event.type,
          attempt: (history.get(event.id)?.attempts ?? 0) + 1,
          trigger: 'RECOVER',
          nextAttemptAt: now,
          logId: newAttemptId(),
          createdAt: now,
        }));
      // Deliveries already waiting in the queue stay as they are (enqueue leaves them), and are not counted.
      const added = await this.deps.deliveries.enqueue(deliveries);
      if (added.length > 0) this.deps.signals.announce({ deliveries: added.map((d) => d.id) });
      queued += added.length;
      if (page.length < RECOVER_PAGE) break;
    }
    return { events: queued };
  }

  private async endpoint(principal: Principal, id: string): Promise<WebhookEndpoint> {
    const endpoint = await this.deps.endpoints.readLive(principal.accountId, id);
    if (!endpoint) throw notFound('webhook endpoint');
    return endpoint;
  }

  private async activeEndpoint(principal: Principal, id: string, why: string): Promise<WebhookEndpoint> {
    const endpoint = await this.endpoint(principal, id);
    if (endpoint.status !== 'ACTIVE')
      throw new AppError('CONFLICT', `The webhook endpoint is ${endpoint.status}: ${why}.`, {
        status: endpoint.status,
      });
    return endpoint;
  }
}

/** Whether an event is one the endpoint should have received. */
function wants(endpoint: WebhookEndpoint, event: DomainEvent): boolean {
  if (event.targetEndpointId !== undefined) return event.targetEndpointId === endpoint.id;
  return (
    event.type !== TEST_EVENT_TYPE &&
    (endpoint.eventTypes.includes('*') || (endpoint.eventTypes as string[]).includes(event.type))
  );
}
