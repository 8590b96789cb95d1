// The app-user lifecycle (docs/api.md, "Connecting a patient's health system"): UNLINKED → LIMITED (first initiate) →
// ACTIVE (first completed connection) → LIMITED (last connection revoked); any state → TOMBSTONED (terminal). Each
// transition is one conditional update of the user's document on the version just read, staged in the outbox with its
// events (outbox.record), so a crash never loses or invents one, and concurrent transitions on one user end in one
// consistent state: the loser of a race re-reads and decides again.
import type { Clock } from '#core/clock.js';
import type { DomainEvent, EventOutbox } from '../events/index.js';
import { changing, type Generations } from '../../shared/infra/generations.js';
import { AppError } from '../../shared/http/errors.js';
import { preconditionHolds, type Precondition } from '../../shared/http/conditional.js';
import type {
  AppUser,
  AppUserStore,
  Connection,
  ConnectionRecord,
  ConnectionStatus,
  HealthLink,
  StateView,
  StoredState,
} from './store.js';

/** Live connections one app user may hold. */
export const MAX_CONNECTIONS_PER_USER = 100;
const ATTEMPTS = 5;

export interface AppUserServiceDeps {
  users: AppUserStore;
  outbox: EventOutbox;
  /** Tokens of what the gateway caches (shared/infra/generations.ts); none in unit tests. */
  generations?: Generations;
  clock: Clock;
  /** After connections were revoked (one, or a tombstone's): their tokens go (features/token-vault). Best effort. */
  onRevoked?: (connectionIds: string[]) => Promise<void>;
}

/** What a transition decides from the user as read: the changes and events, or a refusal (thrown). */
type Decision<T> =
  | { result: T; state?: StoredState; connections?: Connection[]; events: DomainEvent[]; after?: () => Promise<void> }
  | { result: T; unchanged: true };
/** How a never-seen user is created by a transition: its state and events. */
type Creation = { state: StoredState; events: DomainEvent[] };

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
    return this.transition<AppUser>(
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

  /** Complete: a new connection (`connection.created`), and LIMITED → ACTIVE on the first (`app_user.activated`). */
  async connect(
    accountId: string,
    appUserId: string,
    link: { appId: string; brandId: string; sessionId: string; connectionId: string; health?: HealthLink },
  ): Promise<Connection> {
    await this.provision(accountId, appUserId); // a session is only made for a provisioned user; this is a safety net
    const { connectionId, health, ...rest } = link;
    const connection: Connection = {
      id: connectionId,
      ...rest,
      createdAt: this.deps.clock.now(),
      ...(health && { status: 'ACTIVE' as const, health }),
    };
    // A complete taking over from one that died part-way may find the index entry written already.
    const earlier = await this.deps.users.connection(accountId, connectionId);
    if (earlier?.revokedAt) throw new AppError('CONFLICT', 'The connect session is already completed.');
    let indexed = earlier !== null;
    return this.transition<Connection>(accountId, appUserId, async (user) => {
      if (!user || user.state === 'TOMBSTONED') throw tombstoned();
      const made = user.connections.find((c) => c.id === connectionId);
      if (made) return { result: made, unchanged: true }; // the claim's earlier holder got this far
      if (user.connections.some((c) => c.sessionId === link.sessionId))
        throw new AppError('CONFLICT', 'The connect session is already completed.');
      if (user.connections.length >= MAX_CONNECTIONS_PER_USER)
        throw new AppError(
          'LIMIT_EXCEEDED',
          `An app user holds at most ${MAX_CONNECTIONS_PER_USER} live connections.`,
          { limit: MAX_CONNECTIONS_PER_USER },
        );
      if (!indexed) {
        // The index entry first: a connection is never listed without it, and an entry alone grants nothing.
        const record: ConnectionRecord = {
          id: connection.id,
          accountId,
          appUserId,
          appId: link.appId,
          brandId: link.brandId,
          createdAt: connection.createdAt,
          revokedAt: null,
        };
        await this.deps.users.indexConnection(record);
        indexed = true;
      }
      const events = [
        this.deps.outbox.event('connection.created', accountId, `connection:${connection.id}`, {
          connectionId: connection.id,
          appUserId,
          brandId: link.brandId,
        }),
      ];
      if (user.state === 'LIMITED') events.push(this.userEvent('app_user.activated', accountId, appUserId, 'ACTIVE'));
      return { result: connection, state: 'ACTIVE', connections: [...user.connections, connection], events };
    });
  }

  /** The live connection and its user; null when absent, revoked or another account's. */
  async connectionOf(
    accountId: string,
    connectionId: string,
  ): Promise<{ appUserId: string; connection: Connection } | null> {
    const record = await this.deps.users.connection(accountId, connectionId);
    const user = record && (await this.deps.users.find(accountId, record.appUserId));
    const connection = user?.connections.find((c) => c.id === connectionId);
    return connection ? { appUserId: record!.appUserId, connection } : null;
  }

  /**
   * ACTIVE → REAUTHORIZATION_REQUIRED (`connection.reauthorization_required`, with `reason`): its tokens are gone
   * (refused by its health system, another patient's, unreadable). False when the connection is not live (or
   * already there).
   */
  async requireReauthorization(accountId: string, connectionId: string, reason: string): Promise<boolean> {
    return this.setConnectionStatus(accountId, connectionId, 'REAUTHORIZATION_REQUIRED', undefined, reason);
  }

  /** A reconnect's sign-in succeeded: REAUTHORIZATION_REQUIRED → ACTIVE with the new grant; the id stays. */
  async reauthorized(accountId: string, connectionId: string, health: HealthLink): Promise<boolean> {
    return this.setConnectionStatus(accountId, connectionId, 'ACTIVE', health);
  }

  private async setConnectionStatus(
    accountId: string,
    connectionId: string,
    status: ConnectionStatus,
    health?: HealthLink,
    reason?: string,
  ): Promise<boolean> {
    const record = await this.deps.users.connection(accountId, connectionId);
    if (!record) return false;
    return this.transition<boolean>(accountId, record.appUserId, (user) => {
      const connection = user?.connections.find((c) => c.id === connectionId);
      const sameStatus = (connection?.status ?? 'ACTIVE') === status;
      // Already there: only a new reason (a reconnect signed in as another patient) is recorded, without an event.
      if (
        !user ||
        !connection ||
        (sameStatus && !health && (reason === undefined || reason === connection.statusReason))
      )
        return { result: false, unchanged: true };
      const { statusReason: _previous, ...rest } = connection;
      const changed: Connection = {
        ...rest,
        status,
        ...(health && { health }),
        ...(reason !== undefined && { statusReason: reason }),
      };
      const events =
        status === 'REAUTHORIZATION_REQUIRED' && !sameStatus
          ? [
              this.deps.outbox.event('connection.reauthorization_required', accountId, `connection:${connectionId}`, {
                connectionId,
                appUserId: user.appUserId,
                brandId: connection.brandId,
                ...(reason !== undefined && { reason }),
              }),
            ]
          : [];
      const connections = user.connections.map((c) => (c.id === connectionId ? changed : c));
      return { result: true, connections, events };
    });
  }

  /** Revokes one live connection of the account (`connection.revoked`); the last one moves ACTIVE → LIMITED
   * (`app_user.limited`). False when absent, revoked or another account's. */
  async revoke(accountId: string, connectionId: string): Promise<boolean> {
    const record = await this.deps.users.connection(accountId, connectionId);
    if (!record) return false;
    return this.transition<boolean>(accountId, record.appUserId, (user) => {
      const connection = user?.connections.find((c) => c.id === connectionId);
      if (!user || !connection) return { result: false, unchanged: true };
      const rest = user.connections.filter((c) => c.id !== connectionId);
      const events = [this.revokedEvent(accountId, user.appUserId, connection)];
      const state = rest.length === 0 && user.state === 'ACTIVE' ? 'LIMITED' : user.state;
      if (state !== user.state) events.push(this.userEvent('app_user.limited', accountId, user.appUserId, 'LIMITED'));
      return {
        result: true,
        state,
        connections: rest,
        events,
        after: () => this.revoked([connectionId]),
      };
    });
  }

  /** Any state → TOMBSTONED, revoking every connection (`connection.revoked`…, `app_user.tombstoned`); again: nothing.
   * */
  async tombstone(accountId: string, appUserId: string, precondition?: Precondition): Promise<void> {
    const event = () => this.userEvent('app_user.tombstoned', accountId, appUserId, 'TOMBSTONED');
    await this.transition<undefined>(
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
        const events = [...user.connections.map((c) => this.revokedEvent(accountId, appUserId, c)), event()];
        return {
          result: undefined,
          state: 'TOMBSTONED',
          connections: [],
          events,
          after: () => this.revoked(ids),
        };
      },
      { create: { state: 'TOMBSTONED', events: [event()] }, created: () => undefined },
    );
  }

  /**
   * Reads the user, lets `decide` choose, and writes the choice conditionally on the version read, with its
   * events; on a lost race, reads again. A never-seen user (decide → null) is created by `create`, if given.
   */
  private async transition<T>(
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

  private async revoked(ids: string[]): Promise<void> {
    await this.deps.users.markRevoked(ids, this.deps.clock.now());
    await this.deps.onRevoked?.(ids).catch(() => {
      // The tokens of a revoked connection are never used again; its sync removes them if this did not.
    });
  }

  private userEvent(
    type: 'app_user.limited' | 'app_user.activated' | 'app_user.tombstoned',
    accountId: string,
    appUserId: string,
    state: StoredState,
  ): DomainEvent {
    return this.deps.outbox.event(type, accountId, `app_user:${appUserId}`, { appUserId, state });
  }

  private revokedEvent(accountId: string, appUserId: string, connection: Connection): DomainEvent {
    return this.deps.outbox.event('connection.revoked', accountId, `connection:${connection.id}`, {
      connectionId: connection.id,
      appUserId,
      brandId: connection.brandId,
    });
  }
}

const tombstoned = () =>
  new AppError('CONFLICT', 'The app user is TOMBSTONED: it can no longer connect.', { state: 'TOMBSTONED' });
