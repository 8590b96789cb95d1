// In-memory WebhookEndpointStore for unit tests of the webhook-endpoint service;
// test/api/platform/webhook-endpoints/store.test.ts holds it and WebhookEndpointRepository to the same behaviour.
import { MemoryVersioned } from '../../infra/memory-versioned.js';
import type { EndpointChanges, ListPosition, WebhookEndpoint, WebhookEndpointStore } from './repository.js';

const newestFirst = (a: WebhookEndpoint, b: WebhookEndpoint) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

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

  async listLive(accountId: string, limit: number, after?: ListPosition): Promise<{ items: WebhookEndpoint[]; hasMore: boolean }> {
    const live = this.endpoints
      .all()
      .filter((e) => e.accountId === accountId && e.deletedAt === null)
      .sort(newestFirst);
    const rest = after ? live.filter((e) => newestFirst(e, { createdAt: after.createdAt, id: after.id } as WebhookEndpoint) > 0) : live;
    return { items: rest.slice(0, limit), hasMore: rest.length > limit };
  }

  async update(accountId: string, id: string, version: number, changes: EndpointChanges, at: Date): Promise<WebhookEndpoint | null> {
    return this.endpoints.update(`${accountId}/${id}`, version, changes, at);
  }

  async softDelete(accountId: string, id: string, version: number, at: Date): Promise<boolean> {
    return this.endpoints.softDelete(`${accountId}/${id}`, version, at);
  }
}
