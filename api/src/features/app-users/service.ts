// The app-user lifecycle (docs/api.md, "Connecting a patient's health system"): UNLINKED → LIMITED (first initiate) →
// ACTIVE (first completed connection) → LIMITED (last connection revoked); any state → TOMBSTONED (terminal). This
// file holds the user's own steps; a connection's (made, renewed, waiting for its patient, revoked) are
// features/connections', which moves the user between LIMITED and ACTIVE. Both write through transitions.ts.
import type { Precondition } from '../../shared/http/conditional.js';
import { preconditionHolds } from '../../shared/http/conditional.js';
import { AppError } from '../../shared/http/errors.js';
import type { AppUser, AppUserStore, StateView } from './store.js';
import type { UserTransitions } from './transitions.js';

/**
 * What app-users needs of the connections: a tombstone revokes every connection of its user, and whatever a
 * revoked connection held elsewhere (its tokens, its sync) goes with it. features/connections implements it.
 */
export interface ConnectionLifecycle {
  /**
   * The connections were revoked (their user's document no longer lists them): their index entries are marked so,
   * their tokens deleted and their syncs removed. Throws only when the index could not be marked.
   */
  ended(connectionIds: string[]): Promise<void>;
}

export interface AppUserServiceDeps {
  users: AppUserStore;
  transitions: UserTransitions;
  connections: ConnectionLifecycle;
}

export class AppUserService {
  constructor(private readonly deps: AppUserServiceDeps) {}

  /** The user as stored, or null when never seen (UNLINKED). */
  find(accountId: string, appUserId: string): Promise<AppUser | null> {
    return this.deps.users.find(accountId, appUserId);
  }

  /** The state alone, for the lifecycle probe: from the per-replica cache, never a write. */
  state(accountId: string, appUserId: string): Promise<StateView> {
    return this.deps.users.state(accountId, appUserId);
  }

  /** The state as the cache holds it now, without waiting; undefined when it is not cached. */
  cachedState(accountId: string, appUserId: string): StateView | undefined {
    return this.deps.users.cachedState?.(accountId, appUserId);
  }

  /** Initiate: a never-seen user becomes LIMITED (`app_user.limited`); a tombstoned one is refused. */
  provision(accountId: string, appUserId: string): Promise<AppUser> {
    return this.deps.transitions.provision(accountId, appUserId);
  }

  /** Any state → TOMBSTONED, revoking every connection (`connection.revoked`…, `app_user.tombstoned`); again: nothing.
   * */
  async tombstone(accountId: string, appUserId: string, precondition?: Precondition): Promise<void> {
    const { transitions } = this.deps;
    const event = () => transitions.userEvent('app_user.tombstoned', accountId, appUserId, 'TOMBSTONED');
    await transitions.run<undefined>(
      accountId,
      appUserId,
      (user) => {
        // If-Match against the user as read (version 0: never seen); the change is conditional on that version.
        if (!preconditionHolds(precondition, String(user?.version ?? 0)))
          throw new AppError('PRECONDITION_FAILED', 'The app user has changed since the given entity tag.', {
            currentVersion: String(user?.version ?? 0),
          });
        if (!user) return null;
        if (user.state === 'TOMBSTONED') return { result: undefined, unchanged: true };
        const ids = user.connections.map((c) => c.id);
        const events = [...user.connections.map((c) => transitions.revokedEvent(accountId, appUserId, c)), event()];
        return {
          result: undefined,
          state: 'TOMBSTONED',
          connections: [],
          events,
          after: () => this.deps.connections.ended(ids),
        };
      },
      { create: { state: 'TOMBSTONED', events: [event()] }, created: () => undefined },
    );
  }
}
