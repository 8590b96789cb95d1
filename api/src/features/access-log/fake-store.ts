// In-memory AccessLogStore for unit tests; test/api/features/access-log/store.test.ts holds it and
// AccessLogRepository to the same behaviour (docs/architecture.md, "Stores and fakes").
import { keysetSlice, type KeysetPage } from '../../shared/infra/keyset.js';
import type { AccessEntry, AccessLogStore, AccessQuery } from './store.js';

export class FakeAccessLogStore implements AccessLogStore {
  readonly entries: AccessEntry[] = [];
  /** Set to make the next appends fail, as a database that does not answer. */
  failing: Error | undefined;

  async append(entries: readonly AccessEntry[]): Promise<void> {
    if (this.failing) throw this.failing;
    this.entries.push(...entries.map((entry) => structuredClone(entry)));
  }

  async list(accountId: string, appUserId: string, query: AccessQuery): Promise<KeysetPage<AccessEntry>> {
    const mine = this.entries.filter(
      (entry) =>
        entry.accountId === accountId &&
        entry.appUserId === appUserId &&
        (query.since === undefined || entry.createdAt >= query.since),
    );
    const page = keysetSlice(mine, (entry) => ({ createdAt: entry.createdAt, id: entry.id }), query.limit, query.after);
    return { items: page.items.map((entry) => structuredClone(entry)), hasMore: page.hasMore };
  }

  async sweep(before: Date, limit: number): Promise<number> {
    let deleted = 0;
    for (let i = this.entries.length - 1; i >= 0 && deleted < limit; i--)
      if (this.entries[i]!.createdAt < before) {
        this.entries.splice(i, 1);
        deleted++;
      }
    return deleted;
  }
}
