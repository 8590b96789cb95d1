// Publishing one catalog's endpoint health (docs/operator.md, "Publication, without a new snapshot"): the sweeper
// says what moved, and this decides when a new version is due (soon after a change users would see, only every
// refreshPublishMs when just check times moved), writes it through core's EndpointHealthStore one at a time,
// carries on from a publication a former leader made meanwhile, and announces it. Time comes only from the
// injected clock and scheduler, so a test moves it instead of waiting for it (docs/testing.md, "Tests").
import type { Logger } from 'pino';
import {
  countStatuses,
  type EndpointHealthStore,
  type HealthPointer,
  type PublishedHealthWithState,
} from '#core/catalog/endpoint-health.js';
import type { EndpointHealth, EndpointStatus } from '#core/catalog/model.js';
import { catalogKey, type CatalogRef } from '#core/catalog/snapshots.js';
import type { Cancel, Clock, Scheduler } from '#core/clock.js';
import type { HealthTiming } from './settings.js';

/** What the catalog's status shows: the last publication's counts over the snapshot's brands. */
export interface HealthSummary {
  counts: Record<EndpointStatus, number>;
  /** When the last complete pass over every brand ended; null before the first. */
  lastSweepAt: Date | null;
  version: string | null;
}

/** What the sweeper holds, read when a publication begins. */
export interface OutcomeSource {
  /** The outcome of every brand of the snapshot that has one, and the operator's own rows to resume from. */
  outcomes(): { health: Map<string, EndpointHealth>; state: unknown[] };
  /** The counts over the snapshot's brands (UNKNOWN: no outcome yet) and the end of the last complete pass. */
  summarize(): Omit<HealthSummary, 'version'>;
}

/** The publishing a sweeper depends on. */
export interface OutcomePublisher {
  /** Removes what an interrupted publication left, and reads the last publication to resume from. */
  resume(): Promise<PublishedHealthWithState | null>;
  /** The sweeper holds its whole state (`version`: the one it resumed from): publishing starts. */
  start(version: string | null): void;
  /** Something users would see changed: published within the publish delay. */
  markChanged(): void;
  /** Only check times (or the end of a pass) moved: published once the last publication is old enough. */
  markTouched(): void;
  /** The last publication's counts. */
  summary(): HealthSummary;
  /** No more publications on the timer; one under way finishes. */
  stop(): void;
  /** After stop() and the last checks: waits for the publication under way, then publishes what moved since. */
  flush(): Promise<void>;
}

export interface PublisherDeps {
  ref: CatalogRef;
  store: Pick<EndpointHealthStore, 'deleteOrphans' | 'loadWithState' | 'publish' | 'pointer'>;
  timing: Pick<HealthTiming, 'publishDelayMs' | 'refreshPublishMs'>;
  clock: Clock;
  scheduler: Scheduler;
  logger: Logger;
  announce?: (version: string) => Promise<void>;
  source: OutcomeSource;
}

/** Publishes to core's EndpointHealthStore. */
export class HealthPublisher implements OutcomePublisher {
  private readonly key: string;
  private expectedVersion: string | null = null;
  /** Changes users would see, and mere check times, since the last publication. */
  private changed = false;
  private touched = false;
  private lastPublishAt = 0;
  private publishing: Promise<void> | null = null;
  private cancelTicker: Cancel | undefined;
  private stopped = false;
  /** start() was called: only then is what the sweeper holds whole enough to publish. */
  private started = false;
  private published: HealthSummary;

  constructor(private readonly deps: PublisherDeps) {
    this.key = catalogKey(deps.ref);
    this.published = { counts: countStatuses([]), lastSweepAt: null, version: null };
  }

  async resume(): Promise<PublishedHealthWithState | null> {
    const { store, ref, logger } = this.deps;
    await store.deleteOrphans(ref).catch((error: unknown) => {
      logger.warn({ err: error, catalog: this.key }, 'endpoint health: leftover chunks could not be removed');
    });
    const saved = await store.loadWithState(ref);
    if (saved) {
      this.expectedVersion = saved.version;
      this.lastPublishAt = saved.publishedAt.getTime();
    }
    return saved;
  }

  start(version: string | null): void {
    this.published = { ...this.deps.source.summarize(), version };
    this.started = true;
    const every = Math.max(50, Math.min(this.deps.timing.publishDelayMs, 10_000));
    this.cancelTicker = this.deps.scheduler.every(every, () => void this.maybePublish());
  }

  markChanged(): void {
    this.changed = true;
  }

  markTouched(): void {
    this.touched = true;
  }

  summary(): HealthSummary {
    return this.published;
  }

  stop(): void {
    this.stopped = true;
    this.cancelTicker?.();
  }

  async flush(): Promise<void> {
    await this.publishing;
    if (!this.started || (!this.changed && !this.touched)) return;
    await this.publish().catch((error: unknown) => {
      const message = 'endpoint health: the last outcomes could not be published';
      this.deps.logger.warn({ err: error, catalog: this.key }, message);
    });
  }

  private async maybePublish(): Promise<void> {
    if (this.stopped || this.publishing) return;
    const { refreshPublishMs } = this.deps.timing;
    const stale = this.touched && this.deps.clock.now().getTime() - this.lastPublishAt >= refreshPublishMs;
    if (!this.changed && !stale) return;
    await this.publish().catch((error: unknown) => {
      this.deps.logger.warn({ err: error, catalog: this.key }, 'endpoint health could not be published; retrying');
    });
  }

  /** Publishes every brand's outcome as a new version (one at a time). */
  private publish(): Promise<void> {
    if (this.publishing) return this.publishing;
    this.publishing = (async () => {
      const { health, state } = this.deps.source.outcomes();
      // What this publication holds, counted now: checks that end while it is written belong to the next one.
      const summary = this.deps.source.summarize();
      // Flags raised while the publication is written stay raised for the next one.
      this.changed = false;
      this.touched = false;
      let pointer: HealthPointer;
      try {
        pointer = await this.deps.store.publish(this.deps.ref, health, state, this.expectedVersion);
      } catch (error) {
        this.changed = true;
        // Someone else published (a former leader finishing): carry on from theirs rather than fail forever.
        const current = await this.deps.store.pointer(this.deps.ref).catch(() => null);
        if (current && current.version !== this.expectedVersion) this.expectedVersion = current.version;
        throw error;
      }
      this.expectedVersion = pointer.version;
      this.lastPublishAt = this.deps.clock.now().getTime();
      this.published = { ...summary, version: pointer.version };
      await this.deps.announce?.(pointer.version).catch((error: unknown) => {
        const message = 'endpoint health: the announcement failed; API replicas find it by polling';
        this.deps.logger.warn({ err: error, catalog: this.key }, message);
      });
    })().finally(() => {
      this.publishing = null;
    });
    return this.publishing;
  }
}
