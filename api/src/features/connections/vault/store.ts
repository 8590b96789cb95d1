// connection_tokens: one document per signed-in connection (_id the connection id) holding its tokens sealed
// (keyring.ts), what refreshing them needs (the brand and its FHIR base URL), and the lease of the one refresh
// that may run at a time across replicas. Writes are conditional: a refresh is claimed with the version read, and
// its result is stored only while its claim stands, so two replicas never both use one refresh token.
import type { Collection, Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { deleteOneWhere, updateOneWhere } from '#core/infra/where.js';
import type { PlatformType } from '#core/catalog/model.js';
import type { Sealed } from './keyring.js';

export interface TokenRecord {
  connectionId: string;
  accountId: string;
  brand: { id: string; platformType: PlatformType; fhirBaseUrl: string };
  access: Sealed;
  refresh: Sealed | null;
  /** When the access token expires; null when the server did not say. */
  expiresAt: Date | null;
  /** +1 whenever the tokens change. */
  version: number;
  /** A refresh in flight: who holds it and until when (then anyone may take it over). */
  refreshing: { holder: string; until: Date } | null;
  updatedAt: Date;
}

export type NewTokens = Pick<TokenRecord, 'access' | 'refresh' | 'expiresAt'>;

export interface TokenStore {
  /** Stores a connection's tokens, replacing any it had (a reconnect), at a new version. */
  put(record: Omit<TokenRecord, 'version' | 'refreshing'>): Promise<void>;
  get(connectionId: string): Promise<TokenRecord | null>;
  /** Claims the refresh if the record is still at `version` and nobody's claim stands; false otherwise. */
  claimRefresh(connectionId: string, version: number, holder: string, now: Date, until: Date): Promise<boolean>;
  /** Stores refreshed tokens while `holder`'s claim stands, ending it; false when the claim was lost. */
  refreshed(connectionId: string, holder: string, tokens: NewTokens, at: Date): Promise<boolean>;
  /** Ends `holder`'s claim without a change (the refresh failed). */
  release(connectionId: string, holder: string): Promise<void>;
  /** Deletes the tokens (only those at `version`, when given: a reconnect's newer ones stay); true when it did. */
  delete(connectionId: string, version?: number): Promise<boolean>;
  /** Up to `limit` records after the connection id `after`, in id order (the rewrap's walk). */
  page(after: string, limit: number): Promise<TokenRecord[]>;
  /** Replaces the sealed values (the same tokens, sealed afresh) while the record is at `version`; false otherwise. */
  resealed(connectionId: string, version: number, sealed: Pick<TokenRecord, 'access' | 'refresh'>): Promise<boolean>;
  /** How many records use each key (a record sealed under two keys counts under both). */
  entriesByKey(): Promise<Map<string, number>>;
}

type TokenDocument = Omit<TokenRecord, 'connectionId'> & { _id: string };

export class TokenRepository implements TokenStore {
  private readonly collection: Collection<TokenDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.collection = db.collection<TokenDocument>('connection_tokens');
  }

  async put(record: Omit<TokenRecord, 'version' | 'refreshing'>): Promise<void> {
    const { connectionId, ...rest } = record;
    const previous = await this.collection.findOne({ _id: connectionId }, { projection: { version: 1 } });
    await this.collection.replaceOne(
      { _id: connectionId },
      { ...rest, version: (previous?.version ?? 0) + 1, refreshing: null },
      { upsert: true },
    );
  }

  async get(connectionId: string): Promise<TokenRecord | null> {
    const doc = await this.collection.findOne({ _id: connectionId });
    if (!doc) return null;
    const { _id, ...rest } = doc;
    return { connectionId: _id, ...rest };
  }

  async claimRefresh(connectionId: string, version: number, holder: string, now: Date, until: Date): Promise<boolean> {
    const free = { version, $or: [{ refreshing: null }, { 'refreshing.until': { $lt: now } }] };
    return (
      (await updateOneWhere(this.collection, this.locks, connectionId, free, {
        $set: { refreshing: { holder, until } },
      })) !== null
    );
  }

  async refreshed(connectionId: string, holder: string, tokens: NewTokens, at: Date): Promise<boolean> {
    return (
      (await updateOneWhere(
        this.collection,
        this.locks,
        connectionId,
        { 'refreshing.holder': holder },
        { $set: { ...tokens, refreshing: null, updatedAt: at }, $inc: { version: 1 } },
      )) !== null
    );
  }

  async release(connectionId: string, holder: string): Promise<void> {
    await updateOneWhere(
      this.collection,
      this.locks,
      connectionId,
      { 'refreshing.holder': holder },
      {
        $set: { refreshing: null },
      },
    );
  }

  async delete(connectionId: string, version?: number): Promise<boolean> {
    if (version === undefined) return (await this.collection.deleteOne({ _id: connectionId })).deletedCount === 1;
    return deleteOneWhere(this.collection, this.locks, connectionId, { version });
  }

  async page(after: string, limit: number): Promise<TokenRecord[]> {
    const docs = await this.collection
      .find({ _id: { $gt: after } })
      .sort({ _id: 1 })
      .limit(limit)
      .toArray();
    return docs.map(({ _id, ...rest }) => ({ connectionId: _id, ...rest }));
  }

  async resealed(
    connectionId: string,
    version: number,
    sealed: Pick<TokenRecord, 'access' | 'refresh'>,
  ): Promise<boolean> {
    return (await updateOneWhere(this.collection, this.locks, connectionId, { version }, { $set: sealed })) !== null;
  }

  async entriesByKey(): Promise<Map<string, number>> {
    // Grouped by the pair of keys: a handful of groups, whatever the number of connections.
    const groups = await this.collection
      .aggregate<{ _id: { access?: string; refresh?: string | null }; n: number }>([
        { $group: { _id: { access: '$access.kid', refresh: '$refresh.kid' }, n: { $sum: 1 } } },
      ])
      .toArray();
    const counts = new Map<string, number>();
    for (const { _id, n } of groups)
      for (const kid of new Set([_id.access, _id.refresh]))
        if (typeof kid === 'string') counts.set(kid, (counts.get(kid) ?? 0) + n);
    return counts;
  }
}
