// webhook_endpoints: _id is "<account>/<endpoint id>". Writes are conditional on _version (optimistic
// concurrency); deletion is soft. An account has at most 100 live endpoints, so reads work from the
// account's whole live list, cached and invalidated by every write; writes always read the database.
import type { Collection, Db } from 'mongodb';
import type { SharedCache } from '../../infra/cache.js';
import type { DocumentLocks } from '../../../../core/src/infra/locks.js';
import type { EventType } from '../../events/outbox.js';

export interface WebhookEndpoint {
  id: string;
  accountId: string;
  url: string;
  eventTypes: (EventType | '*')[];
  description: string | null;
  status: 'ACTIVE' | 'PAUSED' | 'DISABLED';
  secret: string;
  consecutiveFailures: number;
  lastDeliveryAttemptAt: Date | null;
  lastSuccessfulDeliveryAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  version: number;
  deletedAt: Date | null;
}

export type EndpointChanges = Partial<Pick<WebhookEndpoint, 'url' | 'eventTypes' | 'description' | 'status' | 'consecutiveFailures'>>;

interface EndpointDocument extends Omit<WebhookEndpoint, 'version'> {
  _id: string;
  _version: number;
}

export interface ListPosition {
  createdAt: Date;
  id: string;
}

const keyOf = (accountId: string, id: string) => `${accountId}/${id}`;

export class WebhookEndpointRepository {
  private readonly collection: Collection<EndpointDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
    private readonly cache?: SharedCache<WebhookEndpoint[]>,
  ) {
    this.collection = db.collection<EndpointDocument>('webhook_endpoints');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ accountId: 1, deletedAt: 1, createdAt: -1, id: -1 });
  }

  async insert(endpoint: WebhookEndpoint): Promise<void> {
    const { version, ...rest } = endpoint;
    try {
      await this.collection.insertOne({ _id: keyOf(endpoint.accountId, endpoint.id), _version: version, ...rest });
    } finally {
      this.cache?.invalidate(endpoint.accountId);
    }
  }

  /** The account's live endpoint as stored now (for writes), or null when absent, deleted or foreign. */
  async findLive(accountId: string, id: string): Promise<WebhookEndpoint | null> {
    const doc = await this.collection.findOne({ _id: keyOf(accountId, id) });
    return doc && doc.deletedAt === null ? toEndpoint(doc) : null;
  }

  /** The same, for reads: served from the account's cached live list. */
  async readLive(accountId: string, id: string): Promise<WebhookEndpoint | null> {
    return (await this.allLive(accountId)).find((e) => e.id === id) ?? null;
  }

  /** Newest first (createdAt desc, id desc), strictly after `after`. */
  async listLive(accountId: string, limit: number, after?: ListPosition): Promise<{ items: WebhookEndpoint[]; hasMore: boolean }> {
    const all = await this.allLive(accountId);
    const start = after ? all.findIndex((e) => isAfter(e, after)) : 0;
    const rest = start < 0 ? [] : all.slice(start);
    return { items: rest.slice(0, limit), hasMore: rest.length > limit };
  }

  private async allLive(accountId: string): Promise<WebhookEndpoint[]> {
    // Frozen: cached objects are shared by requests (and their JSON is memoised), so nothing may change them.
    const load = async () => Object.freeze((await this.collection.find({ accountId, deletedAt: null }).sort({ createdAt: -1, id: -1 }).toArray()).map((d) => Object.freeze(toEndpoint(d)))) as WebhookEndpoint[];
    return (await (this.cache ? this.cache.getOrLoad(accountId, load) : load())) ?? [];
  }

  /** Applies changes if the endpoint is still live at `version`; null when it moved on (or went away). */
  async update(accountId: string, id: string, version: number, changes: EndpointChanges, at: Date): Promise<WebhookEndpoint | null> {
    const unset = changes.description === null ? { description: '' as const } : undefined;
    const set = { ...changes, updatedAt: at };
    if (unset) delete set.description;
    const key = keyOf(accountId, id);
    try {
      const doc = await this.locks.withLock(`webhook_endpoints:${key}`, () =>
        this.collection.findOneAndUpdate(
          { _id: key, _version: version, deletedAt: null },
          { $set: set, $inc: { _version: 1 }, ...(unset ? { $unset: unset } : {}) },
          { returnDocument: 'after' },
        ),
      );
      return doc && toEndpoint(doc);
    } finally {
      this.cache?.invalidate(accountId); // also after an ambiguous failure: the write may have happened
    }
  }

  async softDelete(accountId: string, id: string, version: number, at: Date): Promise<boolean> {
    const key = keyOf(accountId, id);
    try {
      const result = await this.locks.withLock(`webhook_endpoints:${key}`, () =>
        this.collection.updateOne({ _id: key, _version: version, deletedAt: null }, { $set: { deletedAt: at, updatedAt: at }, $inc: { _version: 1 } }),
      );
      return result.modifiedCount === 1;
    } finally {
      this.cache?.invalidate(accountId);
    }
  }
}

/** Keyset order: createdAt desc, then id desc. */
function isAfter(endpoint: WebhookEndpoint, position: ListPosition): boolean {
  const t = endpoint.createdAt.getTime() - position.createdAt.getTime();
  return t < 0 || (t === 0 && endpoint.id < position.id);
}

function toEndpoint(doc: EndpointDocument): WebhookEndpoint {
  const { _id, _version, ...rest } = doc;
  return { ...rest, description: rest.description ?? null, version: _version };
}
