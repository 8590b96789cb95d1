// When a signed-in connection's syncs run, as the launch makes it (docs/connecting.md, "The launch"): its sync is
// scheduled a grace period ahead before its tokens are stored, so that if the process dies before the connection
// is made, that sync finds no connection and deletes (and revokes) the tokens; once it is made, its first sync is
// due at once and this replica's worker is woken.
import type { Logger } from 'pino';
import type { Clock } from '#core/clock.js';
import type { SyncRunner } from './runner.js';
import type { SyncState, SyncStore } from './store.js';

/** The connection whose sync is scheduled. */
export type ConnectingSync = Pick<SyncState, 'connectionId' | 'accountId' | 'appUserId' | 'brandId'>;

export class SyncSchedule {
  constructor(
    private readonly store: Pick<SyncStore, 'schedule' | 'requestNow'>,
    private readonly runner: Pick<SyncRunner, 'wake'>,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Before the tokens are stored: the sync is due at `at` (the grace's end). */
  connecting(connection: ConnectingSync, at: Date): Promise<void> {
    return this.store.schedule(connection, at);
  }

  /** The connection was made or renewed: its first sync is due now, and starts at once here. */
  connected({ connectionId }: ConnectingSync): void {
    this.store
      .requestNow(connectionId, this.clock.now())
      .then(() => this.runner.wake())
      .catch((error: unknown) =>
        this.logger.warn(
          { err: error, connectionId },
          'sync: the first sync could not be made due now; it runs after its grace',
        ),
      );
  }
}
