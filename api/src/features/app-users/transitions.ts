// How an app user's document changes (docs/api.md, "Connecting a patient's health system"): each transition is one
// conditional update of the user's document on the version just read, staged in the outbox with its events
// (outbox.record), so a crash never loses or invents one, and concurrent transitions on one user end in one
// consistent state: the loser of a race re-reads and decides again. The user's own lifecycle (service.ts) and its
// connections' (features/connections) both change the document through this.
import type { Clock } from '#core/clock.js';
import type { DomainEvent, EventOutbox } from '../events/index.js';
import { changing, type Generations } from '../../shared/infra/generations.js';
import { AppError } from '../../shared/http/errors.js';
import type { AppUser, AppUserStore, Connection, StoredState } from './store.js';

const ATTEMPTS = 5;

/** What a transition decides from the user as read: the changes and events, or a refusal (thrown). */
export type Decision<T> =
  | { result: T; state?: StoredState; connections?: Connection[]; events: DomainEvent[]; after?: () => Promise<void> }
  | { result: T; unchanged: true };
/** How a never-seen user is created by a transition: its state and events. */
export type Creation = { state: StoredState; events: DomainEvent[] };

export interface UserTransitionsDeps {
  users: AppUserStore;
  outbox: EventOutbox;
  /** Tokens of what the gateway caches (shared/infra/generations.ts); none in unit tests. */
  generations?: Generations;
  clock: Clock;
}

export class UserTransitions {
  constructor(private readonly deps: UserTransitionsDeps) {}

  /** Initiate: a never-seen user becomes LIMITED (`app_user.limited`); a tombstoned one is refused. */
  provision(accountId: string, appUserId: string): Promise<AppUser> {
    return this.run<AppUser>(
      accountId,
      appUserId,
      (user) => {
        if (!user) return null;
        if (user.state === 'TOMBSTONED') throw tombstoned();
        return { result: user, unchanged: true };
      },
      {
        create: { state: 'LIMITED', events: [this.userEvent('app_user.limited', accountId, appUserId, 'LIMITED')] },
        created: (user) => user,
      },
    );
  }

  /**
   * Reads the user, lets `decide` choose, and writes the choice conditionally on the version read, with its
   * events; on a lost race, reads again. A never-seen user (decide → null) is created by `create`, if given.
   */
  async run<T>(
    accountId: string,
    appUserId: string,
    decide: (user: AppUser | null) => Decision<T> | null | Promise<Decision<T> | null>,
    fresh?: { create: Creation; created: (user: AppUser) => T },
  ): Promise<T> {
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const user = await this.deps.users.find(accountId, appUserId);
      const decision = await decide(user);
      if (decision === null) {
        if (!fresh) throw new Error('a transition decided to create a user it cannot create');
        const now = this.deps.clock.now();
        const created: AppUser = {
          accountId,
          appUserId,
          state: fresh.create.state,
          connections: [],
          createdAt: now,
          updatedAt: now,
          version: 1,
        };
        const target = this.deps.users.target(accountId, appUserId, 1);
        // Someone else created it first: undefined drops the staged events, and the next round decides again.
        const done = await this.deps.outbox.record(fresh.create.events, target, async (changeId) =>
          (await this.deps.users.create(created, changeId)) ? created : undefined,
        );
        if (done) return fresh.created(done);
        continue;
      }
      if ('unchanged' in decision) return decision.result;
      const current = user!;
      const target = this.deps.users.target(accountId, appUserId, current.version + 1);
      const changes = {
        ...(decision.state && { state: decision.state }),
        ...(decision.connections && { connections: decision.connections }),
      };
      // Every connection the user had or will have: the gateway's cached checks of each are now stale.
      const touched = [
        ...new Set([...current.connections, ...(decision.connections ?? [])].map((c) => `conn:${c.id}`)),
      ];
      const written = await changing(this.deps.generations, touched, () =>
        this.deps.outbox.record(
          decision.events,
          target,
          async (changeId) =>
            (await this.deps.users.update(
              accountId,
              appUserId,
              current.version,
              changes,
              this.deps.clock.now(),
              changeId,
            )) ?? undefined,
        ),
      );
      if (written) {
        await decision.after?.();
        return decision.result;
      }
    }
    throw new AppError('CONFLICT', 'The app user is being changed concurrently; retry.', {}, {}, { storable: false });
  }

  /**
   * The decision that gives the user `connections` as its live ones, with the connections' own `events`: the user's
   * state follows them here, the one place that rule lives (ACTIVE with any; ACTIVE → LIMITED with none), with its
   * event (`app_user.activated`, `app_user.limited`).
   */
  withConnections<T>(
    user: AppUser,
    connections: Connection[],
    events: DomainEvent[],
    result: T,
    after?: () => Promise<void>,
  ): Decision<T> {
    const state: StoredState = connections.length > 0 ? 'ACTIVE' : user.state === 'ACTIVE' ? 'LIMITED' : user.state;
    const all = [...events];
    if (state === 'ACTIVE' && user.state === 'LIMITED')
      all.push(this.userEvent('app_user.activated', user.accountId, user.appUserId, 'ACTIVE'));
    if (state === 'LIMITED' && user.state === 'ACTIVE')
      all.push(this.userEvent('app_user.limited', user.accountId, user.appUserId, 'LIMITED'));
    return { result, state, connections, events: all, ...(after && { after }) };
  }

  userEvent(
    type: 'app_user.limited' | 'app_user.activated' | 'app_user.tombstoned',
    accountId: string,
    appUserId: string,
    state: StoredState,
  ): DomainEvent {
    return this.deps.outbox.event(type, accountId, `app_user:${appUserId}`, { appUserId, state });
  }

  /** `connection.revoked`: a connection revoked alone, or with its tombstoned user. */
  revokedEvent(
    accountId: string,
    appUserId: string,
    connection: Connection,
    /** Who stopped the sharing: the account (its key), or the patient on their own page (features/portal). */
    by: 'account' | 'patient' = 'account',
  ): DomainEvent {
    return this.deps.outbox.event('connection.revoked', accountId, `connection:${connection.id}`, {
      connectionId: connection.id,
      appUserId,
      brandId: connection.brandId,
      by,
    });
  }
}

export const tombstoned = () =>
  new AppError('CONFLICT', 'The app user is TOMBSTONED: it can no longer connect.', { state: 'TOMBSTONED' });
