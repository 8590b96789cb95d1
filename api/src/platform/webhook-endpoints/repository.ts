// webhook_endpoints: _id is "<account>/<endpoint id>". Writes are conditional on _version (optimistic
// concurrency); deletion is soft.
import type { Collection, Db, Filter } from 'mongodb';
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

  constructor(db: Db) {
    this.collection = db.collection<EndpointDocument>('webhook_endpoints');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ accountId: 1, deletedAt: 1, createdAt: -1, id: -1 });
  }

  async insert(endpoint: WebhookEndpoint): Promise<void> {
    const { version, ...rest } = endpoint;
    await this.collection.insertOne({ _id: keyOf(endpoint.accountId, endpoint.id), _version: version, ...rest });
  }

  /** The account's live endpoint, or null when it is absent, deleted or another account's. */
  async findLive(accountId: string, id: string): Promise<WebhookEndpoint | null> {
    const doc = await this.collection.findOne({ _id: keyOf(accountId, id) });
    return doc && doc.deletedAt === null ? toEndpoint(doc) : null;
  }

  /** Newest first (createdAt desc, id desc), strictly after `after`; one extra row tells if more exist. */
  async listLive(accountId: string, limit: number, after?: ListPosition): Promise<{ items: WebhookEndpoint[]; hasMore: boolean }> {
    const filter: Filter<EndpointDocument> = { accountId, deletedAt: null };
    if (after) filter.$or = [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }];
    const docs = await this.collection.find(filter).sort({ createdAt: -1, id: -1 }).limit(limit + 1).toArray();
    return { items: docs.slice(0, limit).map(toEndpoint), hasMore: docs.length > limit };
  }

  /** Applies changes if the endpoint is still live at `version`; null when it moved on (or went away). */
  async update(accountId: string, id: string, version: number, changes: EndpointChanges, at: Date): Promise<WebhookEndpoint | null> {
    const unset = changes.description === null ? { description: '' as const } : undefined;
    const set = { ...changes, updatedAt: at };
    if (unset) delete set.description;
    const doc = await this.collection.findOneAndUpdate(
      { _id: keyOf(accountId, id), _version: version, deletedAt: null },
      { $set: set, $inc: { _version: 1 }, ...(unset ? { $unset: unset } : {}) },
      { returnDocument: 'after' },
    );
    return doc && toEndpoint(doc);
  }

  async softDelete(accountId: string, id: string, version: number, at: Date): Promise<boolean> {
    const result = await this.collection.updateOne(
      { _id: keyOf(accountId, id), _version: version, deletedAt: null },
      { $set: { deletedAt: at, updatedAt: at }, $inc: { _version: 1 } },
    );
    return result.modifiedCount === 1;
  }
}

function toEndpoint(doc: EndpointDocument): WebhookEndpoint {
  const { _id, _version, ...rest } = doc;
  return { ...rest, description: rest.description ?? null, version: _version };
}
