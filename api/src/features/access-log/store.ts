// access_log: the reads of clinical data (docs/api.md, "The access log"), appended and never changed but by the
// sweep, which removes entries once they are older than the retention (PORTICO_AUDIT_RETENTION). An entry holds
// counts and identifiers, never a record's content; the AuditEvent a caller sees is made from it (audit-event.ts).
import type { Collection, Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { through } from '#core/infra/mongo.js';
import { deleteOneWhere, updateOneWhere } from '#core/infra/where.js';
import type { KeysetPage, KeysetPosition } from '../../shared/infra/keyset.js';
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

/**
 * One write's entries of one app user: the bucket pattern. A replica's group commit (writer.ts) stores each user's
 * share of a batch as one document, its entries packed into one string (JSON, a tuple each). The embedded FerretDB
 * spends its time per value it converts, not per byte: a bucket of a few dozen reads costs it about what one small
 * document does. `first` and `last` bound the entries' times: what the listing pages by and the sweep removes by.
 */
interface Bucket {
  _id: string;
  accountId: string;
  appUserId: string;
  first: Date;
  last: Date;
  /** JSON: Packed[]. */
  entries: string;
}

/** An entry inside its bucket (which holds the account and the user); `t` in milliseconds since 1970. */
type Packed = [
  id: string,
  t: number,
  appId: string,
  connectionId: string,
  brandId: string,
  interaction: AccessEntry['interaction'],
  resourceType: string | null,
  count: number,
  denied: string | null,
  requestId: string,
  keyId: string,
];

const pack = (e: AccessEntry): Packed => [
  e.id,
  e.createdAt.getTime(),
  e.appId,
  e.connectionId,
  e.brandId,
  e.interaction,
  e.resourceType,
  e.count,
  e.denied ?? null,
  e.requestId,
  e.keyId,
];

function unpack(bucket: Bucket): AccessEntry[] {
  return (JSON.parse(bucket.entries) as Packed[]).map(
    ([id, t, appId, connectionId, brandId, interaction, resourceType, count, denied, requestId, keyId]) => ({
      id,
      createdAt: new Date(t),
      accountId: bucket.accountId,
      appUserId: bucket.appUserId,
      appId,
      connectionId,
      brandId,
      interaction,
      resourceType,
      count,
      ...(denied !== null && { denied }),
      requestId,
      keyId,
    }),
  );
}

/** Newest first: by time, then by id. */
const newer = (a: { createdAt: Date; id: string }, b: { createdAt: Date; id: string }) =>
  b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

export class AccessLogRepository implements AccessLogStore {
  private readonly collection: Collection<Bucket>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.collection = db.collection<Bucket>('access_log');
  }

  async init(indexes?: Db): Promise<void> {
    const collection = through(this.collection, indexes);
    await collection.createIndex({ accountId: 1, appUserId: 1, last: -1 });
    await collection.createIndex({ first: 1 });
  }

  async append(entries: readonly AccessEntry[]): Promise<void> {
    const users = new Map<string, AccessEntry[]>();
    for (const entry of entries) {
      const key = `${entry.accountId}\u0000${entry.appUserId}`;
      const theirs = users.get(key);
      if (theirs) theirs.push(entry);
      else users.set(key, [entry]);
    }
    if (users.size === 0) return;
    await this.collection.insertMany([...users.values()].map(bucketOf), { ordered: false });
  }

  async list(accountId: string, appUserId: string, query: AccessQuery): Promise<KeysetPage<AccessEntry>> {
    const { since, after, limit } = query;
    const cursor = this.collection
      .find({
        accountId,
        appUserId,
        ...(since && { last: { $gte: since } }),
        ...(after && { first: { $lte: after.createdAt } }),
      })
      .sort({ last: -1, _id: -1 });
    // Buckets come by their newest entry; their entries interleave (replicas write side by side), so they are merged
    // until no later bucket can hold an entry that ranks above the page's last (the one past it, for `hasMore`).
    const found: AccessEntry[] = [];
    for await (const bucket of cursor) {
      if (found.length > limit && bucket.last < found[limit]!.createdAt) break;
      for (const entry of unpack(bucket)) {
        if (since && entry.createdAt < since) continue;
        if (after && newer(entry, after) <= 0) continue;
        found.push(entry);
      }
      found.sort(newer);
    }
    await cursor.close();
    return { items: found.slice(0, limit), hasMore: found.length > limit };
  }

  async sweep(before: Date, limit: number): Promise<number> {
    const old = await this.collection
      .find({ first: { $lt: before } })
      .sort({ first: 1 })
      .limit(limit)
      .toArray();
    let removed = 0;
    for (const bucket of old) {
      const budget = limit - removed;
      if (budget <= 0) break;
      const entries = unpack(bucket).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
      const gone = entries.filter((e) => e.createdAt < before).slice(0, budget);
      const kept = entries.slice(gone.length);
      // Conditional on the bucket as read (the write routine every store shares, atomic on FerretDB too): of two
      // replicas sweeping at once, one removes these entries.
      const same = { entries: bucket.entries };
      const done =
        kept.length === 0
          ? await deleteOneWhere(this.collection, this.locks, bucket._id, same)
          : (await updateOneWhere(this.collection, this.locks, bucket._id, same, {
              $set: withoutId(bucketOf(kept)),
            })) !== null;
      if (done) removed += gone.length;
    }
    return removed;
  }
}

/** One user's entries as a bucket (named by its first entry's id). */
function bucketOf(entries: AccessEntry[]): Bucket {
  const times = entries.map((e) => e.createdAt.getTime());
  return {
    _id: entries[0]!.id,
    accountId: entries[0]!.accountId,
    appUserId: entries[0]!.appUserId,
    first: new Date(Math.min(...times)),
    last: new Date(Math.max(...times)),
    entries: JSON.stringify(entries.map(pack)),
  };
}

const withoutId = ({ _id, ...rest }: Bucket) => rest;
