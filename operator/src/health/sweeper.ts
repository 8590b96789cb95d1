// The endpoint checks of one catalog: follows its active snapshot's brands, checks each on its schedule
// (schedule.ts) through the shared limits (limiter.ts), and hands the outcomes to its publisher (publisher.ts),
// which publishes them without touching the snapshot: within seconds when something users see changed, every
// few minutes when only check times moved. It starts from the last publication, validators included, so a
// restarted operator carries on where it stopped instead of checking everything again at once. It reads the time
// and sets timers only through the injected clock and scheduler, so its tests move time instead of waiting for it
// (docs/testing.md, "Tests").
import type { Logger } from 'pino';
import { countStatuses, type EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import type { EndpointHealth, EndpointStatus } from '#core/catalog/model.js';
import { catalogKey, type CatalogRef, type SnapshotStore } from '#core/catalog/snapshots.js';
import type { Cancel, Clock, Scheduler } from '#core/clock.js';
import type { PublicHttpsAgent } from '#core/net/address-policy.js';
import { DueQueue } from './due-queue.js';
import { HostLimiter, LimiterStoppedError } from './limiter.js';
import { afterCheck, differs, recordsFrom, stateRow, type BrandRecord } from './outcome.js';
import { probe, type HealthDocument, type ProbeReason, type ProbeResult } from './probe.js';
import { HealthPublisher, type HealthSummary, type OutcomePublisher } from './publisher.js';
import { confirmDue, nextDue, phaseOf } from './schedule.js';
import type { HealthSettings, HealthTiming } from './settings.js';

/** What the checks report as they go (metrics). */
export interface HealthObserver {
  request(document: HealthDocument, result: ProbeReason | 'not-modified', seconds: number): void;
  check(observed: Exclude<EndpointStatus, 'UNKNOWN'>): void;
  throttled(): void;
}

export interface SweeperDeps {
  ref: CatalogRef;
  snapshots: SnapshotStore;
  store: EndpointHealthStore;
  settings: HealthSettings;
  timing: HealthTiming;
  /** A public-only agent for this catalog's checks (its socket limits follow the settings). */
  agent: PublicHttpsAgent;
  clock: Clock;
  /** The sweeper's timers, its limits' and its publisher's (systemScheduler in production). */
  scheduler: Scheduler;
  logger: Logger;
  announce?: (version: string) => Promise<void>;
  observer?: HealthObserver;
}

interface Brand {
  id: string;
  fhirBaseUrl: string;
  /** host[:port]: the unit of the per-host limits. */
  host: string;
  phase: number;
}

export class CatalogHealthSweeper {
  private brands = new Map<string, Brand>();
  private records = new Map<string, BrandRecord>();
  private readonly due = new DueQueue();
  private readonly limiter: HostLimiter;
  private readonly running = new Set<Promise<void>>();
  /** Brands whose check is under way (not in the due queue meanwhile). */
  private readonly checking = new Set<string>();
  private snapshotId: string | null = null;
  private readonly publisher: OutcomePublisher;
  private readonly scheduler: Scheduler;
  private cancelDue: Cancel | undefined;
  private cancelSnapshotPoll: Cancel | undefined;
  private stopped = false;
  /** Brands not yet checked in the current pass. */
  private pass = new Set<string>();
  private lastSweepAt: Date | null = null;
  readonly key: string;

  constructor(private readonly deps: SweeperDeps) {
    const { ref, store, timing, clock, scheduler, logger, announce } = deps;
    this.key = catalogKey(ref);
    this.scheduler = scheduler;
    this.limiter = new HostLimiter(deps.settings, { onThrottled: () => deps.observer?.throttled(), scheduler });
    this.publisher = new HealthPublisher({
      ref,
      store,
      timing,
      clock,
      scheduler,
      logger,
      ...(announce && { announce }),
      source: { outcomes: () => this.outcomes(), summarize: () => this.summarize() },
    });
  }

  get settings(): HealthSettings {
    return this.deps.settings;
  }

  /** Requests to the brands' servers under way now. */
  get requestsInFlight(): number {
    return this.limiter.inFlight;
  }

  /** The last publication's counts (UNKNOWN: brands of the snapshot without an outcome). */
  summary(): HealthSummary {
    return this.publisher.summary();
  }

  /** Resumes from the last publication, loads the snapshot's brands, and starts checking. */
  async start(): Promise<void> {
    const { logger } = this.deps;
    const saved = await this.publisher.resume();
    if (saved) this.records = recordsFrom(saved.health, saved.state);
    await this.followSnapshot();
    const version = saved?.version ?? null;
    const started = { catalog: this.key, brands: this.brands.size, resumed: this.records.size, version };
    logger.info(started, 'endpoint health checks started');
    this.arm();
    // After arm(): timers due at the same instant fire in the order they were set, so with the checks' timer set
    // first a check and a publication due together always run in that order, under manual time too
    // (docs/testing.md, "Tests").
    this.publisher.start(version);
    this.cancelSnapshotPoll = this.scheduler.every(
      this.deps.timing.snapshotPollMs,
      () =>
        void this.followSnapshot().catch((error: unknown) =>
          logger.warn(
            { err: error, catalog: this.key },
            'endpoint health: the snapshot could not be read; keeping the brands',
          ),
        ),
    );
  }

  /** Stops checking (running requests finish), publishes what changed, and closes the connections. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.cancelDue?.();
    this.publisher.stop();
    this.cancelSnapshotPoll?.();
    this.limiter.stop();
    await Promise.all(this.running);
    await this.publisher.flush();
    this.deps.agent.destroy();
  }

  /** Follows the active snapshot: brands that join are scheduled, brands that leave are dropped. */
  async followSnapshot(): Promise<void> {
    const pointer = await this.deps.snapshots.active(this.deps.ref);
    if (!pointer || pointer.snapshotId === this.snapshotId) return;
    const snapshot = await this.deps.snapshots.load(pointer.snapshotId);
    if (!snapshot || this.stopped) return;
    this.snapshotId = snapshot.id;
    this.setBrands(snapshot.brands.map((b) => ({ id: b.id, fhirBaseUrl: b.fhirBaseUrl })));
  }

  private setBrands(list: { id: string; fhirBaseUrl: string }[]): void {
    const now = this.deps.clock.now().getTime();
    const next = new Map<string, Brand>();
    for (const { id, fhirBaseUrl } of list) {
      let host: string;
      try {
        host = new URL(fhirBaseUrl).host;
      } catch {
        continue; // the pipeline publishes absolute URLs only
      }
      const known = this.brands.get(id);
      next.set(
        id,
        known?.fhirBaseUrl === fhirBaseUrl ? known : { id, fhirBaseUrl, host, phase: phaseOf(this.key, id) },
      );
    }
    for (const id of this.brands.keys()) {
      if (next.get(id) !== this.brands.get(id)) this.forget(id);
    }
    for (const id of this.records.keys()) {
      if (!next.has(id)) this.forget(id); // resumed records of brands that left while the operator was away
    }
    const added = [...next.values()].filter((b) => !this.due.has(b.id) && !this.checking.has(b.id));
    this.brands = next;
    for (const brand of added) {
      this.pass.add(brand.id);
      this.schedule(brand, now);
    }
    if (this.pass.size === 0 && this.brands.size > 0) this.pass = new Set(this.brands.keys());
    this.arm();
  }

  private forget(id: string): void {
    this.due.delete(id);
    this.pass.delete(id);
    if (this.records.delete(id)) this.publisher.markChanged();
  }

  private schedule(brand: Brand, now: number): void {
    const record = this.records.get(brand.id);
    const { intervalMs } = this.deps.settings;
    const at =
      record?.suspectSince != null
        ? confirmDue(brand.phase, this.deps.timing.confirmDownMs, now)
        : nextDue({
            phase: brand.phase,
            intervalMs,
            catchUpMs: this.deps.timing.catchUpMs,
            checkedAt: record?.health.checkedAt ? Date.parse(record.health.checkedAt) : null,
            now,
          });
    this.due.set(brand.id, at);
  }

  /** Wakes up when the earliest brand is due (at least once a minute, so clock jumps are noticed). */
  private arm(): void {
    this.cancelDue?.();
    if (this.stopped) return;
    const next = this.due.peek();
    if (next === undefined) return;
    const wait = Math.min(Math.max(0, next - this.deps.clock.now().getTime()), 60_000);
    this.cancelDue = this.scheduler.after(wait, () => this.dispatch());
  }

  private dispatch(): void {
    const now = this.deps.clock.now().getTime();
    for (let id = this.due.popDue(now); id !== undefined; id = this.due.popDue(now)) {
      const brand = this.brands.get(id);
      if (!brand || this.checking.has(id)) continue;
      this.checking.add(id);
      const run: Promise<void> = this.check(brand).finally(() => {
        this.checking.delete(id);
        this.running.delete(run);
      });
      this.running.add(run);
    }
    this.arm();
  }

  private async check(brand: Brand): Promise<void> {
    const previous = this.records.get(brand.id);
    const request = (document: HealthDocument) =>
      this.limiter.run(brand.host, async () => {
        const memory = document === 'metadata' ? previous?.metadata : previous?.smart;
        const { agent, timing } = this.deps;
        const settings = { agent, timeoutMs: timing.requestTimeoutMs, scheduler: this.scheduler };
        const result = await probe(brand.fhirBaseUrl, document, memory, settings);
        this.deps.observer?.request(document, result.notModified ? 'not-modified' : result.reason, result.ms / 1000);
        return result;
      });
    let results: [ProbeResult, ProbeResult];
    try {
      results = await Promise.all([request('metadata'), request('smart-configuration')]);
    } catch (error) {
      if (error instanceof LimiterStoppedError) return;
      this.deps.logger.error(
        { err: error, catalog: this.key, brand: brand.id },
        'endpoint health: a check failed unexpectedly',
      );
      const current = this.brands.get(brand.id);
      if (!this.stopped && current)
        this.schedule(current, this.deps.clock.now().getTime() + this.deps.timing.confirmDownMs);
      return;
    }
    const now = this.deps.clock.now();
    const current = this.brands.get(brand.id);
    if (this.stopped) return;
    if (current !== brand) {
      // It left the snapshot meanwhile, or came back with another URL: then its new self needs a turn.
      if (current && !this.due.has(current.id)) this.schedule(current, now.getTime());
      this.arm();
      return;
    }
    const [metadata, smart] = results;
    const record = afterCheck(previous, metadata, smart, now);
    this.deps.observer?.check(metadata.ok && smart.ok ? 'UP' : metadata.ok || smart.ok ? 'DEGRADED' : 'DOWN');
    this.records.set(brand.id, record);
    if (differs(previous?.health, record.health)) this.publisher.markChanged();
    else if (record.health !== previous?.health) this.publisher.markTouched();
    this.completePass(brand.id, now);
    this.schedule(brand, now.getTime());
    this.arm();
  }

  /** A pass ends when every brand of the snapshot has been checked since the previous one ended. */
  private completePass(id: string, now: Date): void {
    if (!this.pass.delete(id) || this.pass.size > 0) return;
    this.lastSweepAt = now;
    this.pass = new Set(this.brands.keys());
    this.publisher.markTouched();
  }

  /** Every brand's outcome, and the operator's own rows, for a publication. */
  private outcomes(): { health: Map<string, EndpointHealth>; state: unknown[] } {
    const health = new Map<string, EndpointHealth>();
    const state: unknown[] = [];
    for (const id of this.brands.keys()) {
      const record = this.records.get(id);
      if (!record) continue;
      health.set(id, record.health);
      state.push(stateRow(id, record));
    }
    return { health, state };
  }

  private summarize(): Omit<HealthSummary, 'version'> {
    const statuses: EndpointHealth[] = [];
    for (const id of this.brands.keys()) statuses.push(this.records.get(id)?.health ?? UNKNOWN);
    return { counts: countStatuses(statuses), lastSweepAt: this.lastSweepAt };
  }
}

const UNKNOWN: EndpointHealth = { status: 'UNKNOWN', fhirVersion: null, smartConfiguration: false, checkedAt: null };
