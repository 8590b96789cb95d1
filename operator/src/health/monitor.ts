// The endpoint checks of every BrandCatalog this operator leads: the reconciler tells it what each catalog's
// spec asks for (track), and it runs one sweeper per catalog with checks, restarts one whose settings changed,
// stops one whose checks were paused (`enabled: false`, `spec.suspend`) and removes the publication of one
// whose `healthChecks` went away or that was deleted. Status (counts, the last complete pass) and the gauges
// follow the sweepers' publications at a modest rate, never per check. Only the leader reconciles, so only
// the leader checks.
import type { Logger } from 'pino';
import type { EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import { ENDPOINT_STATUSES } from '#core/catalog/model.js';
import type { CatalogRef, SnapshotStore } from '#core/catalog/snapshots.js';
import type { Cancel, Clock, Scheduler } from '#core/clock.js';
import type { PublicHttpsAgent } from '#core/net/address-policy.js';
import { keyOf, type BrandCatalogObject, type KubeClient } from '../shared/kube.js';
import type { OperatorMetrics } from '../shared/metrics.js';
import { DEFAULT_TIMING, healthSettingsOf, sameSettings, type HealthSettings, type HealthTiming } from './settings.js';
import type { HealthSummary } from './publisher.js';
import { CatalogHealthSweeper, type HealthObserver } from './sweeper.js';

export interface HealthMonitorDeps {
  snapshots: SnapshotStore;
  store: EndpointHealthStore;
  kube: Pick<KubeClient, 'patchStatus'>;
  clock: Clock;
  /** The monitor's timers and its sweepers' (systemScheduler in production). */
  scheduler: Scheduler;
  logger: Logger;
  metrics: OperatorMetrics;
  /** A public-only agent sized for a catalog's settings (agent.ts; tests add their stub's CA and address). */
  agentFor: (settings: HealthSettings) => PublicHttpsAgent;
  announce?: (ref: CatalogRef, version: string) => Promise<void>;
  timing?: Partial<HealthTiming>;
  /** How often status and gauges follow the publications. */
  statusEveryMs?: number;
  /** How long to wait before trying again to start a catalog's checks that failed to start. */
  retryMs?: number;
}

interface Tracked {
  catalog: BrandCatalogObject;
  sweeper: CatalogHealthSweeper;
  /** The status fields last written, to write only changes. */
  reported?: string;
}

const STATUS_FIELDS = [
  'endpointsUp',
  'endpointsDegraded',
  'endpointsDown',
  'endpointsUnknown',
  'lastHealthSweepAt',
] as const;

export class HealthMonitor {
  private readonly tracked = new Map<string, Tracked>();
  /** One change at a time per catalog: a restart finishes its stop before its start. */
  private readonly queues = new Map<string, Promise<void>>();
  private readonly retries = new Map<string, Cancel>();
  // The newest object each live catalog was tracked with: a retry starts from what the catalog is now, and a
  // deleted catalog (not here) is never retried.
  private readonly latest = new Map<string, BrandCatalogObject>();
  private readonly timing: HealthTiming;
  private readonly observer: HealthObserver;
  private readonly scheduler: Scheduler;
  private cancelTicker: Cancel | undefined;
  private stopped = false;

  constructor(private readonly deps: HealthMonitorDeps) {
    this.timing = { ...DEFAULT_TIMING, ...deps.timing };
    this.scheduler = deps.scheduler;
    const { metrics } = deps;
    this.observer = {
      request: (document, result, seconds) => {
        metrics.endpointRequests.inc({ document, result });
        metrics.endpointRequestSeconds.observe({ document }, seconds);
      },
      check: (observed) => metrics.endpointChecks.inc({ outcome: observed.toLowerCase() }),
      throttled: () => metrics.endpointThrottled.inc(),
    };
  }

  /** Catalogs being checked now. */
  get catalogs(): string[] {
    return [...this.tracked.keys()];
  }

  /** Requests to the brands' servers under way now, over every catalog checked. */
  get requestsInFlight(): number {
    let count = 0;
    for (const { sweeper } of this.tracked.values()) count += sweeper.requestsInFlight;
    return count;
  }

  /** The settings a catalog's checks run with now; undefined when they do not run. */
  settingsOf(key: string): HealthSettings | undefined {
    return this.tracked.get(key)?.sweeper.settings;
  }

  /** Makes a catalog's checks match its spec; called by every reconcile, so it is cheap when nothing changed. */
  track(catalog: BrandCatalogObject): Promise<void> {
    const key = keyOf(catalog);
    this.latest.set(key, catalog);
    return this.serially(key, async () => {
      if (this.stopped) return;
      this.cancelRetry(key); // this reconcile decides afresh
      const settings = catalog.spec.suspend ? undefined : healthSettingsOf(catalog.spec);
      const current = this.tracked.get(key);
      if (current && settings && sameSettings(current.sweeper.settings, settings)) {
        current.catalog = catalog;
        await current.sweeper.followSnapshot(); // the reconcile may just have activated a snapshot
        return;
      }
      if (current) await this.stopSweeper(key, current);
      if (settings) return this.startSweeper(catalog, settings);
      if (!catalog.spec.healthChecks) await this.unpublish(catalog); // not paused: no checks at all
    });
  }

  /** A deleted catalog: its checks stop and its publication goes. */
  forget(catalog: BrandCatalogObject): Promise<void> {
    const key = keyOf(catalog);
    this.latest.delete(key);
    this.cancelRetry(key);
    return this.serially(key, async () => {
      this.cancelRetry(key);
      const current = this.tracked.get(key);
      if (current) await this.stopSweeper(key, current);
      await this.deps.store.deleteCatalog(refOf(catalog));
      this.removeGauges(key);
    });
  }

  /** Starts following the publications into status and gauges. */
  start(): void {
    this.stopped = false;
    this.cancelTicker?.();
    this.cancelTicker = this.scheduler.every(this.deps.statusEveryMs ?? 60_000, () => void this.report());
  }

  /** Stops every catalog's checks, each publishing what it had, and writes their status a last time. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTicker?.();
    for (const cancel of this.retries.values()) cancel();
    this.retries.clear();
    await Promise.all([...this.queues.values()]);
    const all = [...this.tracked.entries()];
    await Promise.all(all.map(([, tracked]) => tracked.sweeper.stop()));
    await this.report();
    this.tracked.clear();
  }

  /** Writes each catalog's counts to its status when they changed, and sets the gauges. */
  async report(): Promise<void> {
    // Each catalog in its queue: a report never lands after the removal of the counts it would write.
    await Promise.all([...this.tracked.keys()].map((key) => this.serially(key, () => this.reportOne(key))));
  }

  private async reportOne(key: string): Promise<void> {
    const tracked = this.tracked.get(key);
    if (!tracked) return;
    const summary = tracked.sweeper.summary();
    for (const status of ENDPOINT_STATUSES)
      this.deps.metrics.endpoints.set({ catalog: key, status }, summary.counts[status]);
    if (summary.version === null) return; // nothing published yet
    const fields = statusFields(summary);
    const text = JSON.stringify(fields);
    if (text === tracked.reported) return;
    try {
      await this.deps.kube.patchStatus(tracked.catalog, fields);
      tracked.reported = text;
    } catch (error) {
      this.deps.logger.warn({ err: error, catalog: key }, 'endpoint health: status could not be written; next round');
    }
  }

  private serially(key: string, step: () => Promise<void>): Promise<void> {
    const run = (this.queues.get(key) ?? Promise.resolve()).then(step, step);
    const settled = run.catch(() => {});
    this.queues.set(key, settled);
    void settled.then(() => this.queues.get(key) === settled && this.queues.delete(key));
    return run;
  }

  private async startSweeper(catalog: BrandCatalogObject, settings: HealthSettings): Promise<void> {
    const key = keyOf(catalog);
    this.cancelRetry(key);
    const ref = refOf(catalog);
    const sweeper = new CatalogHealthSweeper({
      ref,
      snapshots: this.deps.snapshots,
      store: this.deps.store,
      settings,
      timing: this.timing,
      agent: this.deps.agentFor(settings),
      clock: this.deps.clock,
      scheduler: this.scheduler,
      logger: this.deps.logger,
      observer: this.observer,
      ...(this.deps.announce && { announce: (version: string) => this.deps.announce!(ref, version) }),
    });
    try {
      await sweeper.start();
    } catch (error) {
      await sweeper.stop().catch(() => {});
      this.deps.logger.warn({ err: error, catalog: key }, 'endpoint health checks could not start; trying again');
      const retry = this.scheduler.after(
        this.deps.retryMs ?? 30_000,
        () => {
          this.retries.delete(key);
          const now = this.latest.get(key);
          if (now) void this.track(now);
        },
        { unref: true },
      );
      this.retries.set(key, retry);
      return;
    }
    this.tracked.set(key, { catalog, sweeper });
  }

  private cancelRetry(key: string): void {
    this.retries.get(key)?.();
    this.retries.delete(key);
  }

  private async stopSweeper(key: string, tracked: Tracked): Promise<void> {
    this.tracked.delete(key);
    await tracked.sweeper.stop();
    this.removeGauges(key);
  }

  /** Removes the publication and the status counts of a catalog whose spec no longer asks for checks. */
  private async unpublish(catalog: BrandCatalogObject): Promise<void> {
    const status = catalog.status ?? {};
    if (await this.deps.store.pointer(refOf(catalog))) await this.deps.store.deleteCatalog(refOf(catalog));
    if (STATUS_FIELDS.some((field) => status[field] !== undefined)) {
      await this.deps.kube.patchStatus(catalog, Object.fromEntries(STATUS_FIELDS.map((field) => [field, null])));
    }
  }

  private removeGauges(key: string): void {
    for (const status of ENDPOINT_STATUSES) this.deps.metrics.endpoints.remove({ catalog: key, status });
  }
}

const refOf = (catalog: BrandCatalogObject): CatalogRef => ({
  namespace: catalog.metadata.namespace,
  name: catalog.metadata.name,
});

function statusFields(summary: HealthSummary): Record<string, unknown> {
  return {
    endpointsUp: summary.counts.UP,
    endpointsDegraded: summary.counts.DEGRADED,
    endpointsDown: summary.counts.DOWN,
    endpointsUnknown: summary.counts.UNKNOWN,
    ...(summary.lastSweepAt && { lastHealthSweepAt: summary.lastSweepAt.toISOString() }),
  };
}
