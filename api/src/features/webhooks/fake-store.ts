// In-memory WebhookEndpointStore for unit tests of the webhook-endpoint service;
// test/api/features/webhooks/store.test.ts holds it and WebhookEndpointRepository to the same behaviour.
import type { Clock } from '#core/clock.js';
import { CursorCodec } from '../../shared/http/cursor.js';
import { MemoryVersioned } from '../../shared/infra/memory-versioned.js';
import type { AccountStore } from '../accounts/index.js';
import { FakeDeliveryStore } from './delivery/fake-deliveries.js';
import { WebhookEndpointService } from './service.js';
import type { Resolver } from './url-policy.js';
import {
  deliveryChanges,
  type AttemptedEndpoint,
  type DeliveryOutcome,
  type DisableRule,
  type EndpointChanges,
  type ListPosition,
  type WebhookEndpoint,
  type WebhookEndpointStore,
} from './store.js';

const newestFirst = (a: WebhookEndpoint, b: WebhookEndpoint) =>
  b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

export class FakeWebhookEndpointStore implements WebhookEndpointStore {
  private readonly endpoints = new MemoryVersioned<WebhookEndpoint>();

  async insert(endpoint: WebhookEndpoint): Promise<void> {
    this.endpoints.insert(`${endpoint.accountId}/${endpoint.id}`, endpoint);
  }

  async findLive(accountId: string, id: string): Promise<WebhookEndpoint | null> {
    const endpoint = this.endpoints.get(`${accountId}/${id}`);
    return endpoint?.deletedAt === null ? endpoint : null;
  }

  readLive(accountId: string, id: string): Promise<WebhookEndpoint | null> {
    return this.findLive(accountId, id);
  }

  async allLive(accountId: string): Promise<WebhookEndpoint[]> {
    return this.endpoints
      .all()
      .filter((e) => e.accountId === accountId && e.deletedAt === null)
      .sort(newestFirst);
  }

  async listLive(
    accountId: string,
    limit: number,
    after?: ListPosition,
  ): Promise<{ items: WebhookEndpoint[]; hasMore: boolean }> {
    const live = await this.allLive(accountId);
    const rest = after
      ? live.filter((e) => newestFirst(e, { createdAt: after.createdAt, id: after.id } as WebhookEndpoint) > 0)
      : live;
    return { items: rest.slice(0, limit), hasMore: rest.length > limit };
  }

  async update(
    accountId: string,
    id: string,
    version: number,
    changes: EndpointChanges,
    at: Date,
  ): Promise<WebhookEndpoint | null> {
    return this.endpoints.update(`${accountId}/${id}`, version, changes, at);
  }

  async softDelete(accountId: string, id: string, version: number, at: Date): Promise<boolean> {
    return this.endpoints.softDelete(`${accountId}/${id}`, version, at);
  }

  async recordOutcomes(
    endpoint: AttemptedEndpoint,
    outcomes: readonly DeliveryOutcome[],
    at: Date,
  ): Promise<WebhookEndpoint | null> {
    const current = await this.findLive(endpoint.accountId, endpoint.id);
    if (!current) return null;
    const change = deliveryChanges(outcomes);
    const latest = (a: Date | null, b: Date | undefined) => (b && (!a || b > a) ? b : a);
    // Outcomes made under a failure count started afresh since record their dates alone.
    const counted = current.failureResets === endpoint.failureResets;
    return this.endpoints.update(
      `${endpoint.accountId}/${endpoint.id}`,
      'any',
      {
        ...(counted && {
          consecutiveFailures: change.reset ? change.failures : current.consecutiveFailures + change.failures,
          failingSince: change.reset
            ? (change.firstFailureAt ?? null)
            : (current.failingSince ?? change.firstFailureAt ?? null),
        }),
        lastDeliveryAttemptAt: latest(current.lastDeliveryAttemptAt, change.lastAttemptAt),
        lastSuccessfulDeliveryAt: latest(current.lastSuccessfulDeliveryAt, change.lastSuccessAt),
      },
      at,
    );
  }

  async disable(endpoint: AttemptedEndpoint, rule: DisableRule | undefined, at: Date): Promise<WebhookEndpoint | null> {
    const { accountId, id } = endpoint;
    const current = await this.findLive(accountId, id);
    if (!current || current.status !== 'ACTIVE' || current.failureResets !== endpoint.failureResets) return null;
    if (
      rule &&
      !(
        current.consecutiveFailures >= rule.failures &&
        current.failingSince !== null &&
        current.failingSince <= rule.failingBefore
      )
    )
      return null;
    return this.endpoints.update(`${accountId}/${id}`, current.version, { status: 'DISABLED' }, at);
  }
}

/**
 * The endpoints' part of what createWebhooks builds, on the fake stores (private URLs refused, as in production):
 * for the endpoint service's unit tests. `resolve` answers for the hosts the tests use.
 */
export function createFakeWebhooks(
  clock: Clock,
  { accounts, resolve, cursorSecret }: { accounts: AccountStore; resolve: Resolver; cursorSecret: string },
) {
  const endpoints = new FakeWebhookEndpointStore();
  const deliveries = new FakeDeliveryStore();
  const endpointService = new WebhookEndpointService({
    endpoints,
    accounts,
    cursors: new CursorCodec(cursorSecret),
    urlPolicy: { allowPrivate: false, resolve },
    deliveries,
    clock,
  });
  return { endpoints, deliveries, endpointService };
}
