// In-memory AppUserStore for unit tests of the lifecycle (test/api/features/app-users/service.unit.test.ts), built on
// MemoryVersioned, the same rules VersionedCollection enforces in the database.
import type { Clock } from '#core/clock.js';
import type { ChangeTarget, EventOutbox } from '../events/index.js';
import { DuplicateKeyError, MemoryVersioned } from '../../shared/infra/memory-versioned.js';
import {
  APP_USERS,
  userKey,
  type AppUser,
  type AppUserStore,
  type ConnectionRecord,
  type StateView,
  type UserChanges,
} from './store.js';
import { UserTransitions } from './transitions.js';
import { isDuplicateKey } from '#core/infra/mongo.js';

type Entry = AppUser & { deletedAt: null };

export class FakeAppUserStore implements AppUserStore {
  private readonly users = new MemoryVersioned<Entry>();
  private readonly connections = new Map<string, ConnectionRecord>();

  target(accountId: string, appUserId: string, version: number): ChangeTarget {
    return { collection: APP_USERS, id: userKey(accountId, appUserId), version };
  }

  async find(accountId: string, appUserId: string): Promise<AppUser | null> {
    const entry = this.users.get(userKey(accountId, appUserId));
    return entry && strip(entry);
  }

  async state(accountId: string, appUserId: string): Promise<StateView> {
    return { state: this.users.get(userKey(accountId, appUserId))?.state ?? 'UNLINKED' };
  }

  async create(user: AppUser, changeId: string): Promise<boolean> {
    try {
      this.users.insert(userKey(user.accountId, user.appUserId), { ...user, deletedAt: null }, changeId);
      return true;
    } catch (error) {
      // A duplicate is "already there", as the repository's duplicate key is; anything else is a fault.
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
    const entry = this.users.update(userKey(accountId, appUserId), version, changes, at, changeId);
    return entry && strip(entry);
  }

  async indexConnection(record: ConnectionRecord): Promise<void> {
    if (this.connections.has(record.id)) throw new DuplicateKeyError(record.id); // as the unique _id refuses it
    this.connections.set(record.id, structuredClone(record));
  }

  async connection(accountId: string, connectionId: string): Promise<ConnectionRecord | null> {
    const record = this.connections.get(connectionId);
    return record && record.accountId === accountId ? structuredClone(record) : null;
  }

  async markRevoked(ids: string[], at: Date): Promise<void> {
    for (const id of ids) {
      const record = this.connections.get(id);
      if (record) record.revokedAt = at;
    }
  }
}

function strip(entry: Entry): AppUser {
  const { deletedAt: _deletedAt, ...user } = entry;
  return user;
}

/** The users' documents as createAppUserDocuments builds them, on the fake store: for the lifecycles' unit tests. */
export function createFakeAppUserDocuments(clock: Clock, { outbox }: { outbox: EventOutbox }) {
  const store = new FakeAppUserStore();
  return { store, transitions: new UserTransitions({ users: store, outbox, clock }) };
}
