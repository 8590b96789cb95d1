// webhook_endpoints: _id is "<account>/<endpoint id>". Writes go through VersionedCollection (conditional
// on _version; deletion is soft). An account has at most 100 live endpoints, so reads work from the
// account's whole live list, cached and invalidated by every write; writes always read the database.
import type { Db } from 'mongodb';
import type { DocumentLocks } from '../../../../core/src/infra/locks.js';
import type { EventType } from '../../events/outbox.js';
import type { SharedCache } from '../../infra/cache.js';
import { VersionedCollection } from '../../infra/versioned-collection.js';

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

/** What the webhook-endpoint service needs of storage; WebhookEndpointRepository (MongoDB) and FakeWebhookEndpointStore. */
export interface WebhookEndpointStore {
  insert(endpoint: WebhookEndpoint): Promise<void>;
  /** The account's live endpoint as stored now (for writes), or null when absent, deleted or foreign. */
  findLive(accountId: string, id: string): Promise<WebhookEndpoint | null>;
  /** The same, for reads: may come from a cache. */
  readLive(accountId: string, id: string): Promise<WebhookEndpoint | null>;
  /** Live endpoints newest first (createdAt desc, id desc), strictly after `after`. */
  listLive(accountId: string, limit: number, after?: ListPosition): Promise<{ items: WebhookEndpoint[]; hasMore: boolean }>;
  /** Applies changes (a null description removes it) if the endpoint is live at `version`; null when it moved on or went away. */
  update(accountId: string, id: string, version: number, changes: EndpointChanges, at: Date): Promise<WebhookEndpoint | null>;
  /** Soft-deletes the endpoint if it is live at `version`; false when it moved on or went away. */
  softDelete(accountId: string, id: string, version: number, at: Date): Promise<boolean>;
}

interface EndpointDocument extends Omit<WebhookEndpoint, 'version'> {
  _id: string;
  _version: number;
  _changes?: Record<string, string>;
}

export interface ListPosition {
  createdAt: Date;
  id: string;
}

const keyOf = (accountId: string, id: string) => `${accountId}/${id}`;
const accountOf = (key: string) => key.slice(0, key.indexOf('/'));

export class WebhookEndpointRepository implements WebhookEndpointStore {
  private readonly documents: VersionedCollection<EndpointDocument>;

  constructor(
    db: Db,
    locks: DocumentLocks,
    private readonly cache?: SharedCache<WebhookEndpoint[]>,
  ) {
    this.documents = new VersionedCollection(db.collection<EndpointDocument>('webhook_endpoints'), locks, (key) => cache?.invalidate(accountOf(key)));
  }

  async init(): Promise<void> {
    await this.documents.collection.createIndex({ accountId: 1, deletedAt: 1, createdAt: -1, id: -1 });
  }

  async insert(endpoint: WebhookEndpoint): Promise<void> {
    const { version, ...rest } = endpoint;
    await this.documents.insert({ _id: keyOf(endpoint.accountId, endpoint.id), _version: version, ...rest });
  }

  async findLive(accountId: string, id: string): Promise<WebhookEndpoint | null> {
    const doc = await this.documents.find(keyOf(accountId, id));
    return doc && doc.deletedAt === null ? toEndpoint(doc) : null;
  }

  async readLive(accountId: string, id: string): Promise<WebhookEndpoint | null> {
    return (await this.allLive(accountId)).find((e) => e.id === id) ?? null;
  }

  async listLive(accountId: string, limit: number, after?: ListPosition): Promise<{ items: WebhookEndpoint[]; hasMore: boolean }> {
    const all = await this.allLive(accountId);
    const start = after ? all.findIndex((e) => isAfter(e, after)) : 0;
    const rest = start < 0 ? [] : all.slice(start);
    return { items: rest.slice(0, limit), hasMore: rest.length > limit };
  }

  private async allLive(accountId: string): Promise<WebhookEndpoint[]> {
    // Frozen: cached objects are shared by requests (and their JSON is memoised), so nothing may change them.
    const load = async () =>
      Object.freeze((await this.documents.collection.find({ accountId, deletedAt: null }).sort({ createdAt: -1, id: -1 }).toArray()).map((d) => Object.freeze(toEndpoint(d)))) as WebhookEndpoint[];
    return (await (this.cache ? this.cache.getOrLoad(accountId, load) : load())) ?? [];
  }

  async update(accountId: string, id: string, version: number, changes: EndpointChanges, at: Date): Promise<WebhookEndpoint | null> {
    const { description, ...set } = changes;
    const doc = await this.documents.update(
      keyOf(accountId, id),
      version,
      description === null ? { set, unset: ['description'] } : { set: { ...set, ...(description !== undefined && { description }) } },
      at,
    );
    return doc && toEndpoint(doc);
  }

  softDelete(accountId: string, id: string, version: number, at: Date): Promise<boolean> {
    return this.documents.softDelete(keyOf(accountId, id), version, at);
  }
}

/** Keyset order: createdAt desc, then id desc. */
function isAfter(endpoint: WebhookEndpoint, position: ListPosition): boolean {
  const t = endpoint.createdAt.getTime() - position.createdAt.getTime();
  return t < 0 || (t === 0 && endpoint.id < position.id);
}

function toEndpoint(doc: EndpointDocument): WebhookEndpoint {
  const { _id, _version, _changes, ...rest } = doc;
  return { ...rest, description: rest.description ?? null, version: _version };
}
