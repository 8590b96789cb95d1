// The observation gateway (docs/api.md, "Clinical records and the observation gateway"). Before any clinical data is
// read, in order: the key's scope; app-tenant residency (the connection is live, the key's app's and its account's:
// else one identical 404); the install (the app is not suspended); the subject (the app user is ACTIVE); the resource
// type (Observation granted). Then the install's LOINC, label and look-back grants filter with the caller's parameters
// before anything is counted or paged, so `total` and paging see exactly what the caller may see: over the connection's
// in-memory index (connection-index.ts) or, for a connection too large to index, in the database query (the same
// clauses: matcher.ts and query.ts). Every denial is logged with the request id, key id and reason. The connection, the
// user and the app are cached per replica with the generation tokens read before them (shared/infra/generations.ts; one
// Redis MGET per search), and every revoke, tombstone, PATCH /apps or ingest replaces a token before its request is
// answered: it applies to the next search on every replica.
import type { Logger } from 'pino';
import type { Clock } from '#core/clock.js';
import { lruCache } from '../../../shared/infra/lru.js';
import type { AppUser, AppUserStore, ConnectionRecord } from '../../app-users/index.js';
import type { App, AppStore } from '../../apps/index.js';
import type { Generations } from '../../../shared/infra/generations.js';
import type { RecordStore } from '../records/store.js';
import type { Principal } from '../../../shared/http/auth.js';
import type { CursorCodec } from '../../../shared/http/cursor.js';
import { AppError, notFound } from '../../../shared/http/errors.js';
import { entryOfDocument, type IndexedObservation as Found } from './entries.js';
import type { ConnectionIndexes } from './connection-indexes.js';
import { afterPosition, observationFilter, observationSort, type Grants } from './query.js';
import type { SearchBody } from './schema.js';
import { UUID } from '../../../shared/http/ids.js';
import { encodeWalk, walkOf, type Walk } from './observation-walks.js';
import type { ReadInteraction, ReadLog, ReadSubject } from './read-log.js';
import { ReadRecorder, subjectOf } from './read-recorder.js';

export type DenialReason =
  'INSUFFICIENT_SCOPE' | 'APP_NOT_INSTALLED' | 'SUBJECT_NOT_ACTIVE' | 'RESOURCE_TYPE_NOT_GRANTED';

export interface GatewayDeps {
  users: AppUserStore;
  apps: AppStore;
  observations: RecordStore;
  indexes: ConnectionIndexes;
  generations: Generations;
  cursors: CursorCodec;
  clock: Clock;
  logger: Logger;
  /** Where every read and refusal is recorded before it is answered (the access log). */
  readLog: ReadLog;
}

/** What a read may see, and whose record it reads (for the access log). */
export interface Access {
  grants: Grants & { resourceTypes: string[] };
  /** The connection's `obs:` token, read before anything of its observations is. */
  obs: string;
  subject: ReadSubject;
}

/** What the checks read of a connection, with the `conn:` and `app:` tokens read before it was loaded. */
interface Checked {
  tokens: [string, string];
  record: ConnectionRecord;
  user: AppUser | null;
  app: App | null;
}

/** How long cached checks may be used at all: bounds what a change whose second token replacement failed leaves stale.
 * */
const CHECKS_TTL_MS = 5_000;

export interface SearchPage {
  connectionId: string;
  total: number;
  items: Found[];
  /** The cursor of the next page, when there is one. */
  next: string | null;
  /** The cursor that reproduces this page (for the self link). */
  self: string;
}

/** Whether an install's `resourceTypes` grant lets it read `type` (`*`: every record type). */
export const typeGranted = (resourceTypes: readonly string[], type: string) =>
  resourceTypes.includes('*') || resourceTypes.includes(type);

export class GatewayService {
  /** Connections searched in the last CHECKS_TTL_MS, at most 10,000 (each holds a user and an app's grants). */
  private readonly checks = lruCache<string, Checked>(10_000, { ttl: CHECKS_TTL_MS });

  /** What the access log is told of each read and refusal. */
  readonly recorder: ReadRecorder;

  constructor(private readonly deps: GatewayDeps) {
    this.recorder = new ReadRecorder(deps);
  }

  /** The first check, made before the request's input is even read (the route calls it ahead of validation). */
  checkScope(principal: Principal, requestId: string): void {
    if (!principal.scopes.has('observation:read') || principal.appId === null)
      throw this.denial(principal, requestId, 'INSUFFICIENT_SCOPE');
  }

  /**
   * The scope check of a read that names its connection: a refusal is recorded in the access log of the connection's
   * user when the connection is the caller's account's (`log`: this call answers the refusal, see `search`).
   */
  async requireScope(
    principal: Principal,
    requestId: string,
    connectionId: string | undefined,
    { interaction, type, log }: { interaction: ReadInteraction; type: string | null; log: boolean },
  ): Promise<void> {
    if (principal.scopes.has('observation:read') && principal.appId !== null) return;
    if (log)
      await this.recorder.refusedUnread(principal, requestId, connectionId, interaction, type, 'INSUFFICIENT_SCOPE');
    throw this.denial(principal, requestId, 'INSUFFICIENT_SCOPE', connectionId, log);
  }

  /**
   * A page of the search. `logDenials: false` is for the node:http fast path, which leaves any denial to Koa
   * to answer (and log) again: each denial is logged once.
   */
  async search(
    principal: Principal,
    requestId: string,
    input: { body?: SearchBody; cursor?: string },
    { logDenials = true } = {},
  ): Promise<SearchPage> {
    await this.requireScope(principal, requestId, input.body?.connectionId, {
      interaction: 'search',
      type: 'Observation',
      log: logDenials,
    });
    const walk = walkOf(this.deps, principal, input);
    const { grants, obs, subject } = await this.authorize(principal, requestId, walk.connectionId, logDenials);
    const { items, total } = await this.find(walk, grants, obs, walk.count + 1);
    const page = items.slice(0, walk.count);
    await this.recorder.record(subject, principal, requestId, 'search', 'Observation', page.length);
    const last = page.at(-1);
    const next =
      items.length > walk.count && last
        ? encodeWalk(this.deps.cursors, principal, { ...walk, after: { sortDate: last.sortDate, id: last.id } })
        : null;
    return {
      connectionId: walk.connectionId,
      total,
      items: page,
      next,
      self: encodeWalk(this.deps.cursors, principal, walk),
    };
  }

  /**
   * One observation by its resource id, after the same checks as a search, when the install's grants let the caller
   * see it (LOINC codes, labels, look-back as of now); undefined when it does not exist or the grants hide it.
   */
  async read(
    principal: Principal,
    requestId: string,
    connectionId: string,
    resourceId: string,
  ): Promise<Found | undefined> {
    await this.requireScope(principal, requestId, connectionId, {
      interaction: 'read',
      type: 'Observation',
      log: true,
    });
    const { grants, obs, subject } = await this.authorize(
      principal,
      requestId,
      connectionId,
      true,
      'Observation',
      'read',
    );
    const found = await this.readVisible(connectionId, resourceId, grants, obs);
    await this.recorder.record(subject, principal, requestId, 'read', 'Observation', found ? 1 : 0);
    return found;
  }

  private async readVisible(
    connectionId: string,
    resourceId: string,
    grants: Grants,
    obs: string,
  ): Promise<Found | undefined> {
    const now = this.deps.clock.now();
    const index = await this.deps.indexes.get(connectionId, obs);
    if (index) return index.read(resourceId, grants, now);
    const filter = observationFilter(connectionId, grants, { sort: '-date' }, now, now);
    const { items } = await this.deps.observations.page(
      connectionId,
      { $and: [filter, { _id: `${connectionId}/${resourceId}` }] },
      undefined,
      observationSort('-date'),
      1,
    );
    const doc = items[0];
    return doc && entryOfDocument(doc);
  }

  /**
   * The checks after the scope, in order: app-tenant residency, the install, the subject, the resource type. The
   * install's grants and the connection's `obs:` token (read before anything of its observations is).
   */
  async authorize(
    principal: Principal,
    requestId: string,
    id: string,
    logDenials: boolean,
    /** The type asked for; null for a read of every type (`$everything`), which leaves out the types not granted. */
    resourceType: string | null = 'Observation',
    /** What a refusal is recorded as. */
    interaction: ReadInteraction = resourceType === null ? 'everything' : 'search',
  ): Promise<Access> {
    // A refusal is recorded in the access log of the connection's user when the connection is the caller's account's
    // (another account's, or an unknown id, leaves no trace anywhere), then answered.
    const deny = async (reason: DenialReason | 'CONNECTION_NOT_FOUND') => {
      if (logDenials && record)
        await this.recorder.record(
          subjectOf(principal, record),
          principal,
          requestId,
          interaction,
          resourceType,
          0,
          reason,
        );
      return this.denial(principal, requestId, reason, id, logDenials);
    };
    const keys = [`conn:${id}`, `obs:${id}`, `app:${principal.appId}`];
    // Read only: an id that is unknown or another tenant's leaves no token behind (and costs the same).
    const read = UUID.test(id) ? await this.deps.generations.read(keys) : undefined;
    const checked = read === undefined ? null : await this.checked(principal, id, read[0], read[2]);
    const record = checked?.record;
    const user = record && record.appId === principal.appId ? checked.user : null;
    if (!record || !user?.connections.some((c) => c.id === id)) throw await deny('CONNECTION_NOT_FOUND');
    const app = checked.app;
    if (!app || app.accountId !== principal.accountId || app.status !== 'ACTIVE') throw await deny('APP_NOT_INSTALLED');
    if (user.state !== 'ACTIVE') throw await deny('SUBJECT_NOT_ACTIVE');
    if (resourceType !== null && !typeGranted(app.grants.resourceTypes, resourceType))
      throw await deny('RESOURCE_TYPE_NOT_GRANTED');
    // The caller may read this connection: tokens for what its searches cache (read before the index loads).
    const [, obs] = read!.every((token) => token !== undefined) ? read : await this.deps.generations.ensure(keys);
    return { grants: app.grants, obs: obs!, subject: subjectOf(principal, record) };
  }

  /**
   * The connection's record, its user and the key's app: cached while their tokens stand (loaded after
   * reading them); read afresh, and not cached, while either key has no token yet.
   */
  private async checked(
    principal: Principal,
    connectionId: string,
    conn: string | undefined,
    app: string | undefined,
  ): Promise<Checked | null> {
    const tokens = conn !== undefined && app !== undefined ? ([conn, app] as [string, string]) : undefined;
    const cached = tokens && this.checks.get(connectionId);
    if (
      tokens &&
      cached &&
      cached.tokens[0] === tokens[0] &&
      cached.tokens[1] === tokens[1] &&
      cached.record.accountId === principal.accountId
    )
      return cached;
    const record = await this.deps.users.connection(principal.accountId, connectionId);
    if (!record) return null;
    const mine = record.appId === principal.appId;
    const [user, found] = mine
      ? await Promise.all([
          this.deps.users.find(principal.accountId, record.appUserId),
          this.deps.apps.find(record.appId),
        ])
      : [null, null];
    const checked: Checked = { tokens: tokens ?? ['', ''], record, user, app: found };
    if (mine && tokens) this.checks.set(connectionId, checked);
    return checked;
  }

  /** What the walk's page holds (up to `limit`) and how many match in all: from the index, else the database. */
  private async find(
    walk: Walk,
    grants: Grants,
    token: string,
    limit: number,
  ): Promise<{ items: Found[]; total: number }> {
    const now = this.deps.clock.now();
    const asOf = new Date(walk.asOf);
    const index = await this.deps.indexes.get(walk.connectionId, token);
    if (index) return index.search(grants, walk.params, now, asOf, walk.after, limit);
    const filter = observationFilter(walk.connectionId, grants, walk.params, now, asOf);
    const after =
      walk.after && afterPosition(walk.params.sort, { sortDate: new Date(walk.after.sortDate), id: walk.after.id });
    const { items, total } = await this.deps.observations.page(
      walk.connectionId,
      filter,
      after,
      observationSort(walk.params.sort),
      limit,
    );
    return {
      total,
      items: items.map(entryOfDocument),
    };
  }

  /** Logs a denial (request id, key id, reason) and returns the error to throw. */
  denial(
    principal: Principal,
    requestId: string,
    reason: DenialReason | 'CONNECTION_NOT_FOUND',
    connectionId?: string,
    log = true,
  ): AppError {
    if (log)
      this.deps.logger.info(
        { requestId, keyId: principal.keyId, appId: principal.appId, connectionId, reason },
        'observation gateway denied a search',
      );
    return reason === 'CONNECTION_NOT_FOUND'
      ? notFound('connection')
      : new AppError('GATEWAY_ACCESS_DENIED', 'The app may not read these observations.', { reason });
  }
}
