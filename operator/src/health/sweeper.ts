// The endpoint checks of one catalog: follows its active snapshot's brands, checks each on its schedule
// (schedule.ts) through the shared limits (limiter.ts), and publishes the outcomes (core's
// EndpointHealthStore) without touching the snapshot: within seconds when something users see changed,
// every few minutes when only check times moved. It starts from the last publication, validators included, so
// a restarted operator carries on where it stopped instead of checking everything again at once.
import type { Logger } from 'pino';
import type { EndpointHealthStore, HealthPointer } from '../../../core/src/catalog/endpoint-health.js';
import { countStatuses } from '../../../core/src/catalog/endpoint-health.js';
import type { EndpointHealth, EndpointStatus } from '../../../core/src/catalog/model.js';
import { catalogKey, type CatalogRef, type SnapshotStore } from '../../../core/src/catalog/snapshots.js';
import { systemScheduler, type Cancel, type Clock, type Scheduler } from '../../../core/src/clock.js';
import type { PublicHttpsAgent } from '../../../core/src/net/address-policy.js';
import { DueQueue } from './due-queue.js';
import { HostLimiter, LimiterStoppedError } from './limiter.js';
import { afterCheck, differs, recordsFrom, stateRow, type BrandRecord } from './outcome.js';
import { probe, type HealthDocument, type ProbeReason, type ProbeResult } from './probe.js';
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
  /** The sweeper's timers and its limits' (the system's by default). */
  scheduler?: Scheduler;
  logger: Logger;
  announce?: (version: string) => Promise<void>;
  observer?: HealthObserver;
}

/** What the catalog's status shows: the last publication's counts over the snapshot's brands. */
export interface HealthSummary {
  counts: Record<EndpointStatus, number>;
  /** When the last complete pass over every brand ended; null before the first. */
  lastSweepAt: Date | null;
  version: string | null;
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
  private expectedVersion: string | null = null;
  /** Changes users would see, and mere check times, since the last publication. */
  private changed = false;
  private touched = false;
  private lastPublishAt = 0;
  private publishing: Promise<void> | null = null;
  private readonly scheduler: Scheduler;
  private cancelDue: Cancel | undefined;
  private cancelTicker: Cancel | undefined;
  private cancelSnapshotPoll: Cancel | undefined;
  private stopped = false;
  /** start() completed: only then is what the sweeper holds whole enough to publish. */
  private started = false;
  /** Brands not yet checked in the current pass. */
  private pass = new Set<string>();
  private lastSweepAt: Date | null = null;
  private published: HealthSummary;
  readonly key: string;

  constructor(private readonly deps: SweeperDeps) {
    this.key = catalogKey(deps.ref);
    this.scheduler = deps.scheduler ?? systemScheduler;
    this.limiter = new HostLimiter(deps.settings, { onThrottled: () => deps.observer?.throttled(), scheduler: this.scheduler });
    this.published = { counts: countStatuses([]), lastSweepAt: null, version: null };
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
    return this.published;
  }

  /** Resumes from the last publication, loads the snapshot's brands, and starts checking. */
  async start(): Promise<void> {
    const { store, ref, logger } = this.deps;
    await store.deleteOrphans(ref).catch((error: unknown) => logger.warn({ err: error, catalog: this.key }, 'endpoint health: leftover chunks could not be removed'));
    const saved = await store.loadWithState(ref);
    if (saved) {
      this.records = recordsFrom(saved.health, saved.state);
      this.expectedVersion = saved.version;
      this.lastPublishAt = saved.publishedAt.getTime();
    }
    await this.followSnapshot();
    this.published = this.summarize(saved?.version ?? null);
    this.started = true;
    logger.info({ catalog: this.key, brands: this.brands.size, resumed: this.records.size, version: saved?.version ?? null }, 'endpoint health checks started');
    this.arm();
    this.cancelTicker = this.scheduler.every(Math.max(50, Math.min(this.deps.timing.publishDelayMs, 10_000)), () => void this.maybePublish());
    this.cancelSnapshotPoll = this.scheduler.every(
      this.deps.timing.snapshotPollMs,
      () => void this.followSnapshot().catch((error: unknown) => logger.warn({ err: error, catalog: this.key }, 'endpoint health: the snapshot could not be read; keeping the brands')),
    );
  }

  /** Stops checking (running requests finish), publishes what changed, and closes the connections. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.cancelDue?.();
    this.cancelTicker?.();
    this.cancelSnapshotPoll?.();
    this.limiter.stop();
    await Promise.all(this.running);
    await this.publishing;
    if (this.started && (this.changed || this.touched)) await this.publish().catch((error: unknown) => this.deps.logger.warn({ err: error, catalog: this.key }, 'endpoint health: the last outcomes could not be published'));
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
      next.set(id, known?.fhirBaseUrl === fhirBaseUrl ? known : { id, fhirBaseUrl, host, phase: phaseOf(this.key, id) });
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
    if (this.records.delete(id)) this.changed = true;
  }

  private schedule(brand: Brand, now: number): void {
    const record = this.records.get(brand.id);
    const { intervalMs } = this.deps.settings;
    const at =
      record?.suspectSince != null
        ? confirmDue(brand.phase, this.deps.timing.confirmDownMs, now)
        : nextDue({ phase: brand.phase, intervalMs, catchUpMs: this.deps.timing.catchUpMs, checkedAt: record?.health.checkedAt ? Date.parse(record.health.checkedAt) : null, now });
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
        const result = await probe(brand.fhirBaseUrl, document, document === 'metadata' ? previous?.metadata : previous?.smart, { agent: this.deps.agent, timeoutMs: this.deps.timing.requestTimeoutMs });
        this.deps.observer?.request(document, result.notModified ? 'not-modified' : result.reason, result.ms / 1000);
        return result;
      });
    let results: [ProbeResult, ProbeResult];
    try {
      results = await Promise.all([request('metadata'), request('smart-configuration')]);
    } catch (error) {
      if (error instanceof LimiterStoppedError) return;
      this.deps.logger.error({ err: error, catalog: this.key, brand: brand.id }, 'endpoint health: a check failed unexpectedly');
      const current = this.brands.get(brand.id);
      if (!this.stopped && current) this.schedule(current, this.deps.clock.now().getTime() + this.deps.timing.confirmDownMs);
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
    if (differs(previous?.health, record.health)) this.changed = true;
    else if (record.health !== previous?.health) this.touched = true;
    this.completePass(brand.id, now);
    this.schedule(brand, now.getTime());
    this.arm();
  }

  /** A pass ends when every brand of the snapshot has been checked since the previous one ended. */
  private completePass(id: string, now: Date): void {
    if (!this.pass.delete(id) || this.pass.size > 0) return;
    this.lastSweepAt = now;
    this.pass = new Set(this.brands.keys());
    this.touched = true;
  }

  private async maybePublish(): Promise<void> {
    if (this.stopped || this.publishing) return;
    const stale = this.touched && this.deps.clock.now().getTime() - this.lastPublishAt >= this.deps.timing.refreshPublishMs;
    if (!this.changed && !stale) return;
    await this.publish().catch((error: unknown) => this.deps.logger.warn({ err: error, catalog: this.key }, 'endpoint health could not be published; retrying'));
  }

  /** Publishes every brand's outcome as a new version (one at a time). */
  private publish(): Promise<void> {
    if (this.publishing) return this.publishing;
    this.publishing = (async () => {
      const health = new Map<string, EndpointHealth>();
      const state: unknown[] = [];
      for (const id of this.brands.keys()) {
        const record = this.records.get(id);
        if (!record) continue;
        health.set(id, record.health);
        state.push(stateRow(id, record));
      }
      // What this publication holds, counted now: checks that end while it is written belong to the next one.
      const summary = this.summarize(null);
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
      await this.deps.announce?.(pointer.version).catch((error: unknown) => this.deps.logger.warn({ err: error, catalog: this.key }, 'endpoint health: the announcement failed; API replicas find it by polling'));
    })().finally(() => {
      this.publishing = null;
    });
    return this.publishing;
  }

  private summarize(version: string | null): HealthSummary {
    const statuses: EndpointHealth[] = [];
    for (const id of this.brands.keys()) statuses.push(this.records.get(id)?.health ?? UNKNOWN);
    return { counts: countStatuses(statuses), lastSweepAt: this.lastSweepAt, version };
  }
}

const UNKNOWN: EndpointHealth = { status: 'UNKNOWN', fhirVersion: null, smartConfiguration: false, checkedAt: null };
