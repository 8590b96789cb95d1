// webhook_endpoints: _id is "<account>/<endpoint id>". Writes go through VersionedCollection (conditional
// on _version; deletion is soft). An account has at most 100 live endpoints, so reads work from the
// account's whole live list, cached and invalidated by every write; writes always read the database.
import type { Db, Filter } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import type { EventType } from '../events/index.js';
import type { SharedCache } from '../../shared/infra/cache.js';
import { VersionedCollection } from '../../shared/infra/versioned-collection.js';
import { through } from '#core/infra/mongo.js';

export interface WebhookEndpoint {
  id: string;
  accountId: string;
  url: string;
  eventTypes: (EventType | '*')[];
  description: string | null;
  status: 'ACTIVE' | 'PAUSED' | 'DISABLED';
  secret: string;
  /** The secret before the last rotation, which signs beside the new one until it expires. */
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  consecutiveFailures: number;
  /** When the current run of failures began (null after a success): with the failure count, it disables. */
  failingSince: Date | null;
  /**
   * How many times the owner has started the failure count afresh (setting the endpoint ACTIVE). An attempt's
   * outcome counts only towards the count it was made under: one made before cannot disable the endpoint
   * again (docs/api.md, "Receiving webhooks").
   */
  failureResets: number;
  lastDeliveryAttemptAt: Date | null;
  lastSuccessfulDeliveryAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  version: number;
  deletedAt: Date | null;
}

export type EndpointChanges = Partial<
  Pick<
    WebhookEndpoint,
    | 'url'
    | 'eventTypes'
    | 'description'
    | 'status'
    | 'consecutiveFailures'
    | 'failingSince'
    | 'failureResets'
    | 'secret'
    | 'previousSecret'
    | 'previousSecretExpiresAt'
  >
>;

/** The endpoint an attempt was made to, and the failure count its outcome belongs to. */
export type AttemptedEndpoint = Pick<WebhookEndpoint, 'accountId' | 'id' | 'failureResets'>;

/** One delivery attempt's result, as the endpoint's delivery fields take it. */
export interface DeliveryOutcome {
  at: Date;
  succeeded: boolean;
}

/** When an endpoint is disabled: `failures` consecutive failures while failing since at least `failingBefore`. */
export interface DisableRule {
  failures: number;
  failingBefore: Date;
}

/**
 * The delivery fields after a batch of outcomes (in the order they happened). With a success in the batch
 * everything is known; without one, the count grows from whatever it is now (an increment, so that
 * concurrent batches never lose one) and the run began at the first failure unless it began earlier.
 */
export function deliveryChanges(outcomes: readonly DeliveryOutcome[]): {
  lastAttemptAt: Date;
  lastSuccessAt?: Date;
  failures: number;
  reset: boolean;
  firstFailureAt?: Date;
} {
  const lastSuccess = outcomes.map((o) => o.succeeded).lastIndexOf(true);
  const after = outcomes.slice(lastSuccess + 1);
  return {
    lastAttemptAt: new Date(Math.max(...outcomes.map((o) => o.at.getTime()))),
    ...(lastSuccess >= 0 && { lastSuccessAt: outcomes[lastSuccess]!.at }),
    failures: after.length,
    reset: lastSuccess >= 0,
    ...(after.length > 0 && { firstFailureAt: after[0]!.at }),
  };
}

/** What the webhook-endpoint service needs of storage; WebhookEndpointRepository (MongoDB) and
 * FakeWebhookEndpointStore. */
export interface WebhookEndpointStore {
  insert(endpoint: WebhookEndpoint): Promise<void>;
  /** The account's live endpoint as stored now (for writes), or null when absent, deleted or foreign. */
  findLive(accountId: string, id: string): Promise<WebhookEndpoint | null>;
  /** The same, for reads: may come from a cache. */
  readLive(accountId: string, id: string): Promise<WebhookEndpoint | null>;
  /** Live endpoints newest first (createdAt desc, id desc), strictly after `after`. */
  listLive(
    accountId: string,
    limit: number,
    after?: ListPosition,
  ): Promise<{ items: WebhookEndpoint[]; hasMore: boolean }>;
  /** Applies changes (a null description removes it) if the endpoint is live at `version`; null when it moved on or
   * went away. */
  update(
    accountId: string,
    id: string,
    version: number,
    changes: EndpointChanges,
    at: Date,
  ): Promise<WebhookEndpoint | null>;
  /** Soft-deletes the endpoint if it is live at `version`; false when it moved on or went away. */
  softDelete(accountId: string, id: string, version: number, at: Date): Promise<boolean>;
  /** Every live endpoint of the account, newest first; may come from a cache. */
  allLive(accountId: string): Promise<readonly WebhookEndpoint[]>;
  /**
   * Records attempt outcomes in the delivery fields; the endpoint after, or null when it is gone. Outcomes made
   * under a failure count the owner has started afresh since record their dates alone.
   */
  recordOutcomes(
    endpoint: AttemptedEndpoint,
    outcomes: readonly DeliveryOutcome[],
    at: Date,
  ): Promise<WebhookEndpoint | null>;
  /**
   * ACTIVE → DISABLED, when the rule holds (or at once without one) and the failure count is still the one the
   * outcome behind it was made under; the endpoint disabled, or null if it did not move.
   */
  disable(endpoint: AttemptedEndpoint, rule: DisableRule | undefined, at: Date): Promise<WebhookEndpoint | null>;
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
/** Still under the failure count `resets` (a document written before the field existed is under the first, 0). */
const underCount = (resets: number) =>
  ({ failureResets: { $in: resets === 0 ? [0, null] : [resets] } }) as Filter<EndpointDocument>;

export class WebhookEndpointRepository implements WebhookEndpointStore {
  private readonly documents: VersionedCollection<EndpointDocument>;

  constructor(
    db: Db,
    locks: DocumentLocks,
    private readonly cache?: SharedCache<WebhookEndpoint[]>,
  ) {
    this.documents = new VersionedCollection(db.collection<EndpointDocument>('webhook_endpoints'), locks, (key) =>
      cache?.invalidate(accountOf(key)),
    );
  }

  /** `indexes`: the database handle index builds go through (they can take long). */
  async init(indexes?: Db): Promise<void> {
    await through(this.documents.collection, indexes).createIndex({
      accountId: 1,
      deletedAt: 1,
      createdAt: -1,
      id: -1,
    });
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

  async listLive(
    accountId: string,
    limit: number,
    after?: ListPosition,
  ): Promise<{ items: WebhookEndpoint[]; hasMore: boolean }> {
    const all = await this.allLive(accountId);
    const start = after ? all.findIndex((e) => isAfter(e, after)) : 0;
    const rest = start < 0 ? [] : all.slice(start);
    return { items: rest.slice(0, limit), hasMore: rest.length > limit };
  }

  async allLive(accountId: string): Promise<WebhookEndpoint[]> {
    // Frozen: cached objects are shared by requests (and their JSON is memoised), so nothing may change them.
    const load = async () =>
      Object.freeze(
        (
          await this.documents.collection.find({ accountId, deletedAt: null }).sort({ createdAt: -1, id: -1 }).toArray()
        ).map((d) => Object.freeze(toEndpoint(d))),
      ) as WebhookEndpoint[];
    return (await (this.cache ? this.cache.getOrLoad(accountId, load) : load())) ?? [];
  }

  async update(
    accountId: string,
    id: string,
    version: number,
    changes: EndpointChanges,
    at: Date,
  ): Promise<WebhookEndpoint | null> {
    const { description, ...set } = changes;
    const doc = await this.documents.update(
      keyOf(accountId, id),
      version,
      description === null
        ? { set, unset: ['description'] }
        : { set: { ...set, ...(description !== undefined && { description }) } },
      at,
    );
    return doc && toEndpoint(doc);
  }

  softDelete(accountId: string, id: string, version: number, at: Date): Promise<boolean> {
    return this.documents.softDelete(keyOf(accountId, id), version, at);
  }

  async recordOutcomes(
    endpoint: AttemptedEndpoint,
    outcomes: readonly DeliveryOutcome[],
    at: Date,
  ): Promise<WebhookEndpoint | null> {
    const key = keyOf(endpoint.accountId, endpoint.id);
    const change = deliveryChanges(outcomes);
    const dates = {
      lastDeliveryAttemptAt: change.lastAttemptAt,
      ...(change.lastSuccessAt && { lastSuccessfulDeliveryAt: change.lastSuccessAt }),
    };
    // Batches are written up to 100 ms after their attempts (recorder.ts), and an attempt may take its whole
    // deadline: meanwhile the owner may have set the endpoint ACTIVE again, starting a new failure count that
    // failures from before must not enter (under a short disable rule they disabled it again at once, and what
    // recover had just queued was dropped). So the count moves only if it is still the one they were made under.
    const counted = underCount(endpoint.failureResets);
    const counts = change.reset
      ? { set: { consecutiveFailures: change.failures, failingSince: change.firstFailureAt ?? null } }
      : { inc: { consecutiveFailures: change.failures } };
    const doc = await this.documents.updateWhere(key, counted, { ...counts, max: dates }, at);
    if (!doc) {
      // Counted afresh since (or gone): the attempts were made all the same.
      const dated = await this.documents.update(key, 'any', { max: dates }, at);
      return dated && toEndpoint(dated);
    }
    if (!change.reset && change.firstFailureAt && doc.failingSince == null) {
      // The run of failures starts now unless it had already started: set only where it is unset.
      const unset = { ...counted, failingSince: null, deletedAt: null };
      await this.documents.modify(key, unset, { $set: { failingSince: change.firstFailureAt } });
      return this.findLive(endpoint.accountId, endpoint.id);
    }
    return toEndpoint(doc);
  }

  async disable(endpoint: AttemptedEndpoint, rule: DisableRule | undefined, at: Date): Promise<WebhookEndpoint | null> {
    const failing = rule && {
      consecutiveFailures: { $gte: rule.failures },
      failingSince: { $lte: rule.failingBefore },
    };
    const condition: Filter<EndpointDocument> = { status: 'ACTIVE', ...underCount(endpoint.failureResets), ...failing };
    const key = keyOf(endpoint.accountId, endpoint.id);
    const doc = await this.documents.updateWhere(key, condition, { set: { status: 'DISABLED' } }, at);
    return doc && toEndpoint(doc);
  }
}

/** Keyset order: createdAt desc, then id desc. */
function isAfter(endpoint: WebhookEndpoint, position: ListPosition): boolean {
  const t = endpoint.createdAt.getTime() - position.createdAt.getTime();
  return t < 0 || (t === 0 && endpoint.id < position.id);
}

function toEndpoint(doc: EndpointDocument): WebhookEndpoint {
  const { _id, _version, _changes, ...rest } = doc;
  return {
    ...rest,
    description: rest.description ?? null,
    previousSecret: rest.previousSecret ?? null,
    previousSecretExpiresAt: rest.previousSecretExpiresAt ?? null,
    failingSince: rest.failingSince ?? null,
    failureResets: rest.failureResets ?? 0,
    version: _version,
  };
}
