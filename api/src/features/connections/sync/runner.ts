// Every replica's sync worker (docs/connecting.md, "Sync"): it looks for due syncs every `pollMs` (and at once when
// woken: a connection made, a sync asked for), claims each with a conditional write, so one replica runs it, and
// runs at most `concurrency` at a time. A run whose replica died is due again once its claim lapses, and the
// next replica to look takes it over from the page it had reached.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '#core/clock.js';
import type { SyncService } from './service.js';
import type { SyncStore } from './store.js';

export interface SyncRunnerOptions {
  pollMs: number;
  concurrency: number;
  leaseMs: number;
}

export class SyncRunner {
  private readonly holder = randomUUID();
  private readonly running = new Set<Promise<void>>();
  private stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private looking: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(
    private readonly store: Pick<SyncStore, 'due' | 'claim'>,
    private readonly service: SyncService,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: SyncRunnerOptions,
  ) {}

  start(): void {
    if (this.stopping.signal.aborted) this.stopping = new AbortController();
    this.stopped = false;
    this.timer = setInterval(() => this.wake(), this.options.pollMs);
    this.timer.unref();
    this.wake();
  }

  /** Looks for due syncs now (coalesced with a look under way). */
  wake(): void {
    if (this.stopped) return;
    if (this.looking) {
      this.again = true;
      return;
    }
    this.looking = this.look()
      .catch((error: unknown) => this.logger.warn({ err: error }, 'sync: looking for due syncs failed'))
      .finally(() => {
        this.looking = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Stops looking and waits for the runs in progress (their claims lapse if they do not end). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    clearInterval(this.timer);
    await this.looking;
    await Promise.allSettled([...this.running]);
  }

  private async look(): Promise<void> {
    const free = this.options.concurrency - this.running.size;
    if (free <= 0) return;
    const now = this.clock.now();
    for (const state of await this.store.due(now, free)) {
      if (this.stopped) return;
      const claimed = await this.store.claim(
        state,
        `${this.holder}/${randomUUID()}`,
        now,
        new Date(now.getTime() + this.options.leaseMs),
      );
      if (!claimed) continue;
      const run = this.service
        .run(claimed, this.stopping.signal)
        .catch((error: unknown) =>
          this.logger.error({ err: error, connectionId: state.connectionId }, 'sync: a run failed'),
        )
        .finally(() => {
          this.running.delete(run);
          this.wake();
        });
      this.running.add(run);
    }
  }
}
