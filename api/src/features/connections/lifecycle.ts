// A connection's lifecycle (docs/api.md, "Connecting a patient's health system"; docs/connecting.md): made by a
// completed connect session (`connection.created`, and LIMITED → ACTIVE on a user's first), waiting for its patient
// when its tokens are gone (`connection.reauthorization_required`), renewed by a reconnect, revoked
// (`connection.revoked`, and ACTIVE → LIMITED with the last). A connection lives in its user's document, so each
// step is a transition of that document (features/app-users, transitions.ts), which moves the user's state with its
// connections (withConnections). What a revoked connection held
// elsewhere goes with it: its tokens (vault/) and its sync (sync/). This is the ConnectionLifecycle app-users asks
// for when it tombstones a user.
import type { Clock } from '#core/clock.js';
import {
  tombstoned,
  type AppUserStore,
  type Connection,
  type ConnectionLifecycle,
  type ConnectionRecord,
  type ConnectionStatus,
  type HealthLink,
  type UserTransitions,
} from '../app-users/index.js';
import type { EventOutbox } from '../events/index.js';
import { AppError } from '../../shared/http/errors.js';
import type { SyncStore } from './sync/store.js';
import type { TokenDisposal } from './vault/disposal.js';

/** Live connections one app user may hold. */
export const MAX_CONNECTIONS_PER_USER = 100;

export interface ConnectionServiceDeps {
  users: AppUserStore;
  transitions: UserTransitions;
  outbox: EventOutbox;
  /** Deletes a revoked connection's tokens (and revokes them at its health system). */
  tokens: Pick<TokenDisposal, 'forget'>;
  /** Removes a revoked connection's sync. */
  syncs: Pick<SyncStore, 'remove'>;
  clock: Clock;
}

/** A connection being made: by `complete`, or by a sign-in at the health system (with `health`). */
export interface NewConnection {
  appId: string;
  brandId: string;
  sessionId: string;
  connectionId: string;
  health?: HealthLink;
}

export class ConnectionService implements ConnectionLifecycle {
  constructor(private readonly deps: ConnectionServiceDeps) {}

  /** Complete: a new connection (`connection.created`), and LIMITED → ACTIVE on the first (`app_user.activated`). */
  async connect(accountId: string, appUserId: string, link: NewConnection): Promise<Connection> {
    const { transitions } = this.deps;
    await transitions.provision(accountId, appUserId); // a session is only made for a provisioned user; a safety net
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
    return transitions.run<Connection>(accountId, appUserId, async (user) => {
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
      const created = this.deps.outbox.event('connection.created', accountId, `connection:${connection.id}`, {
        connectionId: connection.id,
        appUserId,
        brandId: link.brandId,
      });
      return transitions.withConnections(user, [...user.connections, connection], [created], connection);
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
    return this.setStatus(accountId, connectionId, 'REAUTHORIZATION_REQUIRED', undefined, reason);
  }

  /** A reconnect's sign-in succeeded: REAUTHORIZATION_REQUIRED → ACTIVE with the new grant; the id stays. */
  async reauthorized(accountId: string, connectionId: string, health: HealthLink): Promise<boolean> {
    return this.setStatus(accountId, connectionId, 'ACTIVE', health);
  }

  /** Revokes one live connection of the account (`connection.revoked`); the last one moves ACTIVE → LIMITED
   * (`app_user.limited`). False when absent, revoked or another account's. `by`: who stopped the sharing (the event
   * says). */
  async revoke(accountId: string, connectionId: string, by: 'account' | 'patient' = 'account'): Promise<boolean> {
    const { transitions } = this.deps;
    const record = await this.deps.users.connection(accountId, connectionId);
    if (!record) return false;
    return transitions.run<boolean>(accountId, record.appUserId, (user) => {
      const connection = user?.connections.find((c) => c.id === connectionId);
      if (!user || !connection) return { result: false, unchanged: true };
      const rest = user.connections.filter((c) => c.id !== connectionId);
      const revoked = transitions.revokedEvent(accountId, user.appUserId, connection, by);
      return transitions.withConnections(user, rest, [revoked], true, () => this.ended([connectionId]));
    });
  }

  async ended(connectionIds: string[]): Promise<void> {
    const now = this.deps.clock.now();
    await this.deps.users.markRevoked(connectionIds, now);
    try {
      for (const id of connectionIds) {
        await this.deps.tokens.forget(id);
        await this.deps.syncs.remove(id, now);
      }
    } catch {
      // The tokens of a revoked connection are never used again; its sync removes them if this did not.
    }
  }

  private async setStatus(
    accountId: string,
    connectionId: string,
    status: ConnectionStatus,
    health?: HealthLink,
    reason?: string,
  ): Promise<boolean> {
    const record = await this.deps.users.connection(accountId, connectionId);
    if (!record) return false;
    return this.deps.transitions.run<boolean>(accountId, record.appUserId, (user) => {
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
}
