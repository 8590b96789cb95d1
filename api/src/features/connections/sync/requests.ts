// Asking for a signed-in connection's sync now (`POST /connections/{id}/sync`, docs/connecting.md, "Sync"), and where
// a sync stands (`GET /app-users/{id}`). The runs themselves: service.ts.
import type { Clock } from '#core/clock.js';
import type { AccountStore } from '../../accounts/index.js';
import type { AppStore } from '../../apps/index.js';
import type { Principal } from '../../../shared/http/auth.js';
import { AppError, notFound } from '../../../shared/http/errors.js';
import { UUID } from '../../../shared/http/ids.js';
import type { ConnectionService } from '../lifecycle.js';
import type { SyncState, SyncStore } from './store.js';

/** `POST /connections/{id}/sync` within this of a run's start is 429: one tenant cannot make Portico hammer a server. */
export const SYNC_REQUEST_INTERVAL_MS = 60_000;

export interface SyncRequestDeps {
  store: SyncStore;
  connections: Pick<ConnectionService, 'connectionOf'>;
  /** Whether the account or the app is suspended (then nothing is synced), as stored now. */
  accounts: Pick<AccountStore, 'find'>;
  apps: Pick<AppStore, 'find'>;
  clock: Clock;
}

export class SyncRequests {
  constructor(private readonly deps: SyncRequestDeps) {}

  /**
   * Due now; a running sync goes on (it is not started twice); 429 within a minute of the last run's start. `full`:
   * the next run is a full one (store.ts, SyncRun `full`).
   */
  async request(principal: Principal, connectionId: string, { full = false } = {}): Promise<SyncState> {
    const live = UUID.test(connectionId)
      ? await this.deps.connections.connectionOf(principal.accountId, connectionId)
      : null;
    if (!live) throw notFound('connection');
    if (!live.connection.health)
      throw new AppError(
        'CONFLICT',
        'The connection was not made by signing in at a health system; Portico has nothing to sync it from.',
      );
    if (await suspendedNow(this.deps, principal.accountId, live.connection.appId))
      // Not stored by idempotency: the same request is answered once the app is active again.
      throw new AppError(
        'CONFLICT',
        "The connection's app is suspended: it is not synced until it is active again.",
        {},
        {},
        { storable: false },
      );
    const now = this.deps.clock.now();
    const current = await this.deps.store.get(connectionId);
    const started = current?.run?.startedAt ?? current?.lastStartedAt ?? null;
    const wait = started === null ? 0 : started.getTime() + SYNC_REQUEST_INTERVAL_MS - now.getTime();
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      throw new AppError(
        'RATE_LIMITED',
        'A sync of this connection began less than a minute ago; ask again after the time given.',
        { retryAfterSeconds: seconds },
        { 'Retry-After': String(seconds) },
      );
    }
    // A connection whose sync was never scheduled (its process died in between) gets one now.
    const { id, brandId } = live.connection;
    const state =
      (await this.deps.store.requestNow(id, now, full)) ??
      (await this.deps.store
        .schedule({ connectionId: id, accountId: principal.accountId, appUserId: live.appUserId, brandId }, now)
        .then(() => this.deps.store.requestNow(id, now, full)));
    if (!state) throw notFound('connection');
    return state;
  }

  /** A sync's state, for `GET /app-users/{id}`. */
  state(connectionId: string): Promise<SyncState | null> {
    return this.deps.store.get(connectionId);
  }
}

/** As stored now: a reactivation made anywhere (the command line, another replica) counts at once. */
export async function suspendedNow(
  deps: Pick<SyncRequestDeps, 'accounts' | 'apps'>,
  accountId: string,
  appId: string,
): Promise<boolean> {
  const [account, app] = await Promise.all([deps.accounts.find(accountId), deps.apps.find(appId)]);
  return account?.status !== 'ACTIVE' || app?.status !== 'ACTIVE';
}
