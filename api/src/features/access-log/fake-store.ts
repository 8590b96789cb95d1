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
    // The oldest first, as the repository removes them.
    const old = this.entries
      .filter((entry) => entry.createdAt < before)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
      .slice(0, limit);
    for (const entry of old) this.entries.splice(this.entries.indexOf(entry), 1);
    return old.length;
  }
}
