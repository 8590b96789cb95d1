// In-memory AccountStore for unit tests of services that read accounts or take quota.
import { MemoryVersioned } from '../../shared/infra/memory-versioned.js';
import { keysetSlice, type KeysetPage, type KeysetPosition } from '../../shared/infra/keyset.js';
import type { AccountStore, CustomerAccount, Quota } from './store.js';

type Entry = CustomerAccount & {
  usage: Record<Quota, number>;
  version: number;
  updatedAt: Date;
  deletedAt: Date | null;
};

export class FakeAccountStore implements AccountStore {
  private readonly accounts = new MemoryVersioned<Entry>();

  async insert(account: CustomerAccount): Promise<void> {
    this.accounts.insert(account.id, {
      ...account,
      usage: { webhookEndpoints: 0 },
      version: 1,
      updatedAt: account.createdAt,
      deletedAt: null,
    });
  }

  async get(id: string): Promise<CustomerAccount | null> {
    const entry = this.accounts.get(id);
    return entry && { id: entry.id, name: entry.name, status: entry.status, createdAt: entry.createdAt };
  }

  find(id: string): Promise<CustomerAccount | null> {
    return this.get(id);
  }

  async reserve(id: string, quota: Quota, max: number): Promise<boolean> {
    return this.accounts.modify(id, (entry) => {
      if (entry.usage[quota] >= max) return false;
      entry.usage[quota] += 1;
      return true;
    });
  }

  async release(id: string, quota: Quota): Promise<void> {
    this.accounts.modify(id, (entry) => {
      if (entry.usage[quota] <= 0) return false;
      entry.usage[quota] -= 1;
      return true;
    });
  }

  async setStatus(id: string, status: CustomerAccount['status'], at = new Date()): Promise<CustomerAccount | null> {
    this.accounts.update(id, 'any', { status }, at);
    return this.get(id);
  }

  async list(limit: number, after?: KeysetPosition): Promise<KeysetPage<CustomerAccount>> {
    const page = keysetSlice(this.accounts.all(), (entry) => entry, limit, after);
    return {
      items: page.items.map(({ id, name, status, createdAt }) => ({ id, name, status, createdAt })),
      hasMore: page.hasMore,
    };
  }

  /** For tests: what a quota stands at. */
  usage(id: string, quota: Quota): number | undefined {
    return this.accounts.get(id)?.usage[quota];
  }
}
