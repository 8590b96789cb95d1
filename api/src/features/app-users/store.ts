// app_users: one document per (customer account, appUserId), _id "<account>/<appUserId>", holding the
// user's lifecycle state and its live connections. Every transition is one conditional update of this one
// document on its `_version` (no read-then-write race, no multi-document transaction), recorded with the
// outbox's change id; a user never seen has no document and is UNLINKED.
//
// connections: an index from a connection id to its user (_id the connection id), written before the user
// document lists the connection and marked revoked after it stops listing it. The user document is the
// truth: a connection is live only while its user lists it.
import type { Collection, Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import type { ChangeTarget } from '../events/index.js';
import type { SharedCache } from '../../shared/infra/cache.js';
import { VersionedCollection } from '../../shared/infra/versioned-collection.js';
import { through, isDuplicateKey } from '#core/infra/mongo.js';

export type StoredState = 'LIMITED' | 'ACTIVE' | 'TOMBSTONED';
export type LifecycleState = 'UNLINKED' | StoredState;

export interface Connection {
  id: string;
  appId: string;
  brandId: string;
  /** The connect session it completed (a session completes once). */
  sessionId: string;
  createdAt: Date;
  /** Absent: ACTIVE. REAUTHORIZATION_REQUIRED when its tokens are gone (see statusReason). */
  status?: ConnectionStatus;
  /** Why it is REAUTHORIZATION_REQUIRED: `invalid_grant`, `patient_mismatch`, `token_unreadable`. */
  statusReason?: string;
  /** For a connection made by signing in at the health system (docs/connecting.md). */
  health?: HealthLink;
}

export type ConnectionStatus = 'ACTIVE' | 'REAUTHORIZATION_REQUIRED';

/** Where a signed-in connection's records come from: the brand's FHIR server, the EHR's patient id, the grant. */
export interface HealthLink {
  fhirBaseUrl: string;
  patient: string;
  scope: string;
}

export interface AppUser {
  accountId: string;
  appUserId: string;
  state: StoredState;
  connections: Connection[];
  createdAt: Date;
  updatedAt: Date;
  version: number;
}

/** What the lifecycle probe needs, cached per replica (never-seen users too: they are polled the most). */
export interface StateView {
  state: LifecycleState;
}

export interface ConnectionRecord {
  id: string;
  accountId: string;
  appUserId: string;
  appId: string;
  brandId: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface UserChanges {
  state?: StoredState;
  connections?: Connection[];
}

/** What the lifecycle service needs of storage; AppUserRepository (MongoDB) and FakeAppUserStore (tests). */
export interface AppUserStore {
  target(accountId: string, appUserId: string, version: number): ChangeTarget;
  /** The user as stored now; null when never seen. */
  find(accountId: string, appUserId: string): Promise<AppUser | null>;
  /** The user's state for the probe; may come from a cache that every change invalidates. */
  state(accountId: string, appUserId: string): Promise<StateView>;
  /** What state would answer from the cache now; undefined when it is not cached. */
  cachedState?(accountId: string, appUserId: string): StateView | undefined;
  /** Creates the user; false when it exists already (someone else created it first). */
  create(user: AppUser, changeId: string): Promise<boolean>;
  /** Applies the changes if the user is at `version`; the user after, or null when it moved on. */
  update(
    accountId: string,
    appUserId: string,
    version: number,
    changes: UserChanges,
    at: Date,
    changeId: string,
  ): Promise<AppUser | null>;
  /** Records a connection in the index (before the user lists it). */
  indexConnection(record: ConnectionRecord): Promise<void>;
  /** The index entry of a connection of the account; null when absent or another account's. */
  connection(accountId: string, connectionId: string): Promise<ConnectionRecord | null>;
  /** Marks index entries revoked (after the user stopped listing them). */
  markRevoked(ids: string[], at: Date): Promise<void>;
}

export const APP_USERS = 'app_users';

interface AppUserDocument extends Omit<AppUser, 'version'> {
  _id: string;
  _version: number;
  deletedAt: null;
  _changes?: Record<string, string>;
}

type ConnectionDocument = Omit<ConnectionRecord, 'id'> & { _id: string };

export const userKey = (accountId: string, appUserId: string): string => `${accountId}/${appUserId}`;

export class AppUserRepository implements AppUserStore {
  private readonly documents: VersionedCollection<AppUserDocument>;
  private readonly connections: Collection<ConnectionDocument>;

  constructor(
    db: Db,
    locks: DocumentLocks,
    private readonly cache?: SharedCache<StateView>,
  ) {
    this.documents = new VersionedCollection(db.collection<AppUserDocument>(APP_USERS), locks, (key) =>
      cache?.invalidate(key),
    );
    this.connections = db.collection<ConnectionDocument>('connections');
  }

  /** `indexes`: the database handle index builds go through (they can take long). */
  async init(indexes?: Db): Promise<void> {
    await through(this.connections, indexes).createIndex({ accountId: 1, appUserId: 1 });
  }

  target(accountId: string, appUserId: string, version: number): ChangeTarget {
    return { collection: APP_USERS, id: userKey(accountId, appUserId), version };
  }

  async find(accountId: string, appUserId: string): Promise<AppUser | null> {
    const doc = await this.documents.find(userKey(accountId, appUserId));
    return doc && toUser(doc);
  }

  cachedState(accountId: string, appUserId: string): StateView | undefined {
    return this.cache?.peek(userKey(accountId, appUserId)) ?? undefined;
  }

  async state(accountId: string, appUserId: string): Promise<StateView> {
    const load = async (): Promise<StateView> =>
      Object.freeze({ state: (await this.documents.find(userKey(accountId, appUserId)))?.state ?? 'UNLINKED' });
    return (this.cache ? await this.cache.getOrLoad(userKey(accountId, appUserId), load) : null) ?? load();
  }

  async create(user: AppUser, changeId: string): Promise<boolean> {
    const { version, ...rest } = user;
    try {
      await this.documents.insert(
        { _id: userKey(user.accountId, user.appUserId), _version: version, ...rest, deletedAt: null },
        changeId,
      );
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async update(
    accountId: string,
    appUserId: string,
    version: number,
    changes: UserChanges,
    at: Date,
    changeId: string,
  ): Promise<AppUser | null> {
    const doc = await this.documents.update(userKey(accountId, appUserId), version, { set: changes }, at, changeId);
    return doc && toUser(doc);
  }

  async indexConnection(record: ConnectionRecord): Promise<void> {
    const { id, ...rest } = record;
    await this.connections.insertOne({ _id: id, ...rest });
  }

  async connection(accountId: string, connectionId: string): Promise<ConnectionRecord | null> {
    const doc = await this.connections.findOne({ _id: connectionId });
    if (!doc || doc.accountId !== accountId) return null;
    const { _id, ...rest } = doc;
    return { id: _id, ...rest };
  }

  async markRevoked(ids: string[], at: Date): Promise<void> {
    // By _id one at a time: the only filter the embedded database answers from an index.
    for (const id of ids) await this.connections.updateOne({ _id: id }, { $set: { revokedAt: at } });
  }
}

function toUser(doc: AppUserDocument): AppUser {
  const { _id, _version, _changes, deletedAt: _deletedAt, ...rest } = doc;
  return { ...rest, version: _version };
}
