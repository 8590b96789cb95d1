// access_log: one document per read of clinical data (docs/api.md, "The access log"), appended and never changed;
// each is removed only once it is older than the retention (PORTICO_AUDIT_RETENTION), by the sweep. A document
// holds counts and identifiers, never a record's content; the AuditEvent a caller sees is made from it
// (audit-event.ts).
import type { Collection, Db } from 'mongodb';
import { through } from '#core/infra/mongo.js';
import { keysetPage, type KeysetPage, type KeysetPosition } from '../../shared/infra/keyset.js';
import type { ReadEntry } from '../clinical/index.js';

/** One read as stored: the gateway's entry, its id (UUIDv7, in time order) and when it was recorded. */
export interface AccessEntry extends Omit<ReadEntry, 'requestId' | 'keyId'> {
  id: string;
  /** When the read was answered (recorded just before). */
  createdAt: Date;
  requestId: string;
  keyId: string;
}

export interface AccessQuery {
  /** Only entries recorded at or after this time. */
  since?: Date;
  limit: number;
  after?: KeysetPosition;
}

export interface AccessLogStore {
  /** Stores the entries durably, all or (on an error) some: the caller answers none of their reads then. */
  append(entries: readonly AccessEntry[]): Promise<void>;
  /** The user's entries, newest first. */
  list(accountId: string, appUserId: string, query: AccessQuery): Promise<KeysetPage<AccessEntry>>;
  /** Deletes up to `limit` entries recorded before `before`; how many it deleted. */
  sweep(before: Date, limit: number): Promise<number>;
}

type AccessDocument = Omit<AccessEntry, 'id'> & { _id: string };

export class AccessLogRepository implements AccessLogStore {
  private readonly collection: Collection<AccessDocument>;

  constructor(db: Db) {
    this.collection = db.collection<AccessDocument>('access_log');
  }

  async init(indexes?: Db): Promise<void> {
    const collection = through(this.collection, indexes);
    await collection.createIndex({ accountId: 1, appUserId: 1, createdAt: -1, _id: -1 });
    await collection.createIndex({ createdAt: 1 });
  }

  async append(entries: readonly AccessEntry[]): Promise<void> {
    if (entries.length === 0) return;
    // Unordered: one entry refused (it never is: each id is new) does not keep the others out.
    await this.collection.insertMany(
      entries.map(({ id, ...rest }) => ({ _id: id, ...rest })),
      { ordered: false },
    );
  }

  async list(accountId: string, appUserId: string, query: AccessQuery): Promise<KeysetPage<AccessEntry>> {
    const filter = { accountId, appUserId, ...(query.since && { createdAt: { $gte: query.since } }) };
    const { items, hasMore } = await keysetPage(this.collection, filter, '_id', query.limit, query.after);
    return { items: items.map(({ _id, ...rest }) => ({ id: _id, ...rest })), hasMore };
  }

  async sweep(before: Date, limit: number): Promise<number> {
    const old = await this.collection
      .find({ createdAt: { $lt: before } }, { projection: { _id: 1 } })
      .limit(limit)
      .toArray();
    if (old.length === 0) return 0;
    // Entries never change, so no lock: what was old when found is old still.
    const { deletedCount } = await this.collection.deleteMany({ _id: { $in: old.map((doc) => doc._id) } });
    return deletedCount;
  }
}
