// In-memory TokenStore for unit tests of the token vault (test/api/features/connections/vault/vault.unit.test.ts);
// test/api/features/connections/vault/store.test.ts holds it and TokenRepository to the same behaviour
// (docs/architecture.md, "Stores and fakes"): versions, the one refresh claimed at a time, deletes and reseals at
// the version read, the rewrap's walk in id order. Records go in and come out as copies, as through a database.
import type { NewTokens, TokenRecord, TokenStore } from './store.js';

const copy = <T>(value: T): T => structuredClone(value);

export class FakeTokenStore implements TokenStore {
  private readonly records = new Map<string, TokenRecord>();

  async put(record: Omit<TokenRecord, 'version' | 'refreshing'>): Promise<void> {
    // A replacement: numbered on from the record it replaces, from 1 when there is none (as the repository does).
    const previous = this.records.get(record.connectionId);
    this.records.set(record.connectionId, { ...copy(record), version: (previous?.version ?? 0) + 1, refreshing: null });
  }

  async get(connectionId: string): Promise<TokenRecord | null> {
    const record = this.records.get(connectionId);
    return record ? copy(record) : null;
  }

  async claimRefresh(connectionId: string, version: number, holder: string, now: Date, until: Date): Promise<boolean> {
    const record = this.records.get(connectionId);
    const free = record?.refreshing == null || record.refreshing.until < now;
    if (!record || record.version !== version || !free) return false;
    record.refreshing = { holder, until: new Date(until) };
    return true;
  }

  async refreshed(connectionId: string, holder: string, tokens: NewTokens, at: Date): Promise<boolean> {
    // While the claim is the holder's, lapsed or not: only another's claim (a takeover) or a replacement ends it.
    const record = this.records.get(connectionId);
    if (record?.refreshing?.holder !== holder) return false;
    Object.assign(record, copy(tokens), { refreshing: null, updatedAt: new Date(at), version: record.version + 1 });
    return true;
  }

  async release(connectionId: string, holder: string): Promise<void> {
    const record = this.records.get(connectionId);
    if (record?.refreshing?.holder === holder) record.refreshing = null;
  }

  async delete(connectionId: string, version?: number): Promise<boolean> {
    const record = this.records.get(connectionId);
    if (!record || (version !== undefined && record.version !== version)) return false;
    return this.records.delete(connectionId);
  }

  async page(after: string, limit: number): Promise<TokenRecord[]> {
    const ids = [...this.records.keys()].filter((id) => id > after).sort();
    // A limit of 0 is no limit, as the driver's is.
    return (limit === 0 ? ids : ids.slice(0, limit)).map((id) => copy(this.records.get(id)!));
  }

  async resealed(
    connectionId: string,
    version: number,
    sealed: Pick<TokenRecord, 'access' | 'refresh'>,
  ): Promise<boolean> {
    // The same tokens sealed afresh: neither the version nor updatedAt moves.
    const record = this.records.get(connectionId);
    if (!record || record.version !== version) return false;
    Object.assign(record, copy(sealed));
    return true;
  }

  async entriesByKey(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const { access, refresh } of this.records.values())
      for (const kid of new Set([access.kid, refresh?.kid]))
        if (typeof kid === 'string') counts.set(kid, (counts.get(kid) ?? 0) + 1);
    return counts;
  }
}
