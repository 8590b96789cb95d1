// reconcile(catalog): make the published catalog match one BrandCatalog, idempotently, in named steps:
// a deleted catalog is finalized (its snapshots, endpoint health and the artwork only it used go); otherwise
// the finalizer is ensured, the endpoint checks are told what the spec asks for (health/monitor.ts), a
// suspended catalog only says so, and a catalog that is due is loaded (every source fetched and parsed),
// published (pipeline/publish.ts), and its outcome written to status and as an Event. It returns when to
// look again; errors propagate to the caller, which records them and backs off.
import type { Logger } from 'pino';
import type { CatalogRef, SnapshotStore } from '../../../core/src/catalog/snapshots.js';
import type { Clock } from '../../../core/src/clock.js';
import type { ObjectStorage } from '../../../core/src/object-storage/types.js';
import type { HealthMonitor } from '../health/monitor.js';
import { parseDuration, type SourceSpec } from '../shared/catalog-spec.js';
import { loadSource } from '../pipeline/index.js';
import { publishCatalog, type PublishReport } from '../pipeline/publish.js';
import type { LoadedSource } from '../pipeline/types.js';
import { setCondition, type Condition } from './conditions.js';
import { FINALIZER, keyOf, type BrandCatalogObject, type KubeClient } from '../shared/kube.js';
import type { OperatorMetrics } from '../shared/metrics.js';

export const COMPONENT = 'portico-catalog-operator';

/** Status and Event messages stay short: they are bounded by the CRD and readable by anyone who can list catalogs. */
const clip = (message: string, max = 1024) => (message.length > max ? `${message.slice(0, max - 1)}…` : message);

export interface ReconcileDeps {
  kube: KubeClient;
  store: SnapshotStore;
  storage: ObjectStorage;
  clock: Clock;
  logger: Logger;
  metrics: OperatorMetrics;
  /** https only, through the SSRF filter; the in-cluster controller never reads files. */
  fetchText: (url: string) => Promise<string>;
  announce?: (ref: CatalogRef, snapshotId: string) => Promise<void>;
  /** The endpoint checks (spec.healthChecks); absent, none run. */
  health?: HealthMonitor;
}

/** Milliseconds until the catalog should be reconciled again; undefined: only on change. */
export type Requeue = number | undefined;

type Status = {
  conditions?: Condition[];
  observedGeneration?: number;
  lastSyncTime?: string;
  sources?: { name: string; error?: string }[];
};

/** A source that could not be loaded, named so status can say which. */
class SourceError extends Error {
  constructor(
    readonly source: string,
    message: string,
  ) {
    super(message);
  }
}

export async function reconcile(catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<Requeue> {
  if (catalog.metadata.deletionTimestamp) return finalize(catalog, deps);
  const finalizers = catalog.metadata.finalizers ?? [];
  if (!finalizers.includes(FINALIZER)) {
    await deps.kube.setFinalizers(catalog, [...finalizers, FINALIZER]);
    return undefined; // the finalizer change comes back through the watch and enqueues the catalog again
  }
  await followHealthChecks(catalog, deps);
  if (catalog.spec.suspend) return reportSuspended(catalog, deps);
  const wait = untilDue(catalog, deps.clock.now());
  if (wait > 0) return wait;

  const conditions = await reportReconciling(catalog, deps);
  let report: PublishReport;
  try {
    const sources = await loadSources(catalog, deps);
    report = await publishCatalog({
      ref: refOf(catalog),
      spec: catalog.spec,
      sources,
      store: deps.store,
      storage: deps.storage,
      ...(deps.announce && { announce: (id: string) => deps.announce!(refOf(catalog), id) }),
    });
  } catch (error) {
    await reportFailure(catalog, conditions, error as Error, deps);
    throw error;
  }
  await reportPublished(catalog, conditions, report, deps);
  await followHealthChecks(catalog, deps); // the checks follow the new snapshot's brands at once
  return parseDuration(catalog.spec.refreshInterval);
}

/** Endpoint health is an addition to the catalog: a failure to follow the spec is logged, never fatal to publishing. */
async function followHealthChecks(catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<void> {
  await deps.health
    ?.track(catalog)
    .catch((error: unknown) =>
      deps.logger.warn(
        { err: error, catalog: refOf(catalog) },
        'endpoint health checks could not follow the spec; next reconcile',
      ),
    );
}

const refOf = (catalog: BrandCatalogObject): CatalogRef => ({
  namespace: catalog.metadata.namespace,
  name: catalog.metadata.name,
});
const statusOf = (catalog: BrandCatalogObject): Status => catalog.status ?? {};

/** Deletion: objects first, documents last (a failure halfway leaves the snapshots that say what to delete), then the
 * finalizer. */
async function finalize(catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<Requeue> {
  const finalizers = catalog.metadata.finalizers ?? [];
  if (!finalizers.includes(FINALIZER)) return undefined;
  const ref = refOf(catalog);
  const orphaned = await deps.store.orphanedArtwork(ref);
  for (const key of orphaned) await deps.storage.delete(key);
  await deps.health?.forget(catalog);
  await deps.store.deleteCatalog(ref);
  deps.metrics.brandsPublished.remove({ catalog: keyOf(catalog) });
  deps.logger.info({ catalog: ref, objectsDeleted: orphaned.length }, 'catalog deleted: snapshots and artwork removed');
  await deps.kube.setFinalizers(
    catalog,
    finalizers.filter((f) => f !== FINALIZER),
  );
  return undefined;
}

async function reportSuspended(catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<Requeue> {
  const generation = catalog.metadata.generation;
  await deps.kube.patchStatus(catalog, {
    observedGeneration: generation,
    conditions: setCondition(
      statusOf(catalog).conditions ?? [],
      {
        type: 'Reconciling',
        status: 'False',
        reason: 'Suspended',
        message: 'spec.suspend is true',
        observedGeneration: generation,
      },
      deps.clock.now(),
    ),
  });
  return undefined;
}

/** Milliseconds until the next refresh; 0 or less when due now (a new generation or a failing catalog is always due).
 * */
function untilDue(catalog: BrandCatalogObject, now: Date): number {
  const status = statusOf(catalog);
  const failing =
    status.conditions?.some((c) => c.type === 'Ready' && c.status === 'False' && c.reason === 'ReconcileFailed') ??
    false;
  if (status.observedGeneration !== catalog.metadata.generation || failing) return 0;
  const lastSync = status.lastSyncTime ? new Date(status.lastSyncTime).getTime() : 0;
  return lastSync + parseDuration(catalog.spec.refreshInterval) - now.getTime();
}

async function reportReconciling(catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<Condition[]> {
  const generation = catalog.metadata.generation;
  const conditions = setCondition(
    statusOf(catalog).conditions ?? [],
    {
      type: 'Reconciling',
      status: 'True',
      reason: 'Publishing',
      message: 'fetching sources and publishing a snapshot',
      observedGeneration: generation,
    },
    deps.clock.now(),
  );
  await deps.kube.patchStatus(catalog, { conditions });
  return conditions;
}

/** Every source's text, read the way a cluster allows (inline, ConfigMap, https), and parsed. */
async function loadSources(catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<LoadedSource[]> {
  const sources: LoadedSource[] = [];
  for (const source of catalog.spec.sources) {
    try {
      sources.push(await loadSource(source, () => sourceText(source, catalog, deps)));
    } catch (error) {
      throw new SourceError(source.name, clip((error as Error).message, 512));
    }
  }
  return sources;
}

async function sourceText(source: SourceSpec, catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<string> {
  if (source.inline !== undefined) return source.inline;
  if (source.configMapRef)
    return deps.kube.configMapValue(catalog.metadata.namespace, source.configMapRef.name, source.configMapRef.key);
  if (source.url?.startsWith('https://')) return deps.fetchText(source.url);
  throw new Error('only https:// URLs, configMapRef and inline sources can be read in a cluster');
}

async function reportFailure(
  catalog: BrandCatalogObject,
  reconciling: Condition[],
  error: Error,
  deps: ReconcileDeps,
): Promise<void> {
  const generation = catalog.metadata.generation;
  const message = clip(error.message);
  const now = deps.clock.now();
  let conditions = setCondition(
    reconciling,
    { type: 'Ready', status: 'False', reason: 'ReconcileFailed', message, observedGeneration: generation },
    now,
  );
  conditions = setCondition(
    conditions,
    { type: 'Reconciling', status: 'True', reason: 'RetryingAfterError', message, observedGeneration: generation },
    now,
  );
  conditions = setCondition(
    conditions,
    {
      type: 'Stalled',
      status: 'False',
      reason: 'RetryingAfterError',
      message: 'the operator retries with backoff',
      observedGeneration: generation,
    },
    now,
  );
  // The Event first: it must be told even if the status write fails too.
  await recordEvent(catalog, 'Warning', 'ReconcileFailed', message, deps);
  const failed = error instanceof SourceError ? error.source : undefined;
  // The last good counts stay; the failing source gains its error.
  const lastGood = (name: string) => {
    const { error: _error, ...counts } = statusOf(catalog).sources?.find((p) => p.name === name) ?? { name };
    return counts;
  };
  await deps.kube.patchStatus(catalog, {
    observedGeneration: generation,
    conditions,
    sources: catalog.spec.sources.map((s) => ({
      ...lastGood(s.name),
      name: s.name,
      ...(s.name === failed && { error: message }),
    })),
  });
}

async function reportPublished(
  catalog: BrandCatalogObject,
  reconciling: Condition[],
  report: PublishReport,
  deps: ReconcileDeps,
): Promise<void> {
  const generation = catalog.metadata.generation;
  const at = deps.clock.now();
  const stalled = report.stalled;
  let conditions = setCondition(
    reconciling,
    {
      type: 'Reconciling',
      status: 'False',
      reason: stalled ? stalled.reason : 'Published',
      message: stalled ? stalled.message : `snapshot ${report.snapshot.id} is active`,
      observedGeneration: generation,
    },
    at,
  );
  conditions = setCondition(
    conditions,
    {
      type: 'Stalled',
      status: stalled ? 'True' : 'False',
      reason: stalled ? stalled.reason : 'Published',
      message: stalled ? stalled.message : 'no problem',
      observedGeneration: generation,
    },
    at,
  );
  conditions = setCondition(
    conditions,
    stalled
      ? {
          type: 'Ready',
          status: 'False',
          reason: stalled.reason,
          message: `${stalled.message}; the previous snapshot stays active`,
          observedGeneration: generation,
        }
      : {
          type: 'Ready',
          status: 'True',
          reason: 'Published',
          message: `${report.brandCount} brands in snapshot ${report.snapshot.id}`,
          observedGeneration: generation,
        },
    at,
  );
  // What is served: a held-back build does not change the count users see.
  const active = stalled ? await deps.store.active(refOf(catalog)) : undefined;
  const current = active ? await deps.store.header(active.snapshotId) : null;
  const served = stalled ? (current?.brandCount ?? 0) : report.brandCount;
  deps.metrics.brandsPublished.set({ catalog: keyOf(catalog) }, served);
  for (const outcome of ['rendered', 'fallback', 'failed'] as const)
    deps.metrics.logos.inc({ outcome }, report.logos[outcome]);
  await deps.kube.patchStatus(catalog, {
    observedGeneration: generation,
    conditions,
    brandCount: served,
    duplicatesMerged: report.duplicatesMerged,
    sources: report.perSource.map((s) => ({ name: s.name, rowsRead: s.rows, rejected: s.rejected, kept: s.kept })),
    logos: { rendered: report.logos.rendered, fallback: report.logos.fallback, failed: report.logos.failed },
    currentSnapshot: stalled
      ? current && { id: current.id, brandCount: current.brandCount, publishedAt: current.createdAt.toISOString() }
      : {
          id: report.snapshot.id,
          brandCount: report.snapshot.brandCount,
          publishedAt: report.snapshot.publishedAt.toISOString(),
        },
    lastSyncTime: at.toISOString(),
    nextSyncTime: new Date(at.getTime() + parseDuration(catalog.spec.refreshInterval)).toISOString(),
  });
  if (stalled) await recordEvent(catalog, 'Warning', stalled.reason, stalled.message, deps);
  else if (report.snapshot.created) {
    const diff = report.diff
      ? ` (+${report.diff.added.length} −${report.diff.removed.length} ~${report.diff.changed.length})`
      : '';
    await recordEvent(
      catalog,
      'Normal',
      'Published',
      `snapshot ${report.snapshot.id} with ${report.brandCount} brands${diff}`,
      deps,
    );
  }
}

/** Writes an Event; one that cannot be written is counted and logged (once), and never fails the reconcile. */
async function recordEvent(
  catalog: BrandCatalogObject,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
  deps: ReconcileDeps,
): Promise<void> {
  try {
    await deps.kube.event(catalog, type, reason, message, COMPONENT);
  } catch (error) {
    deps.metrics.eventWriteFailures.inc({ reason });
    deps.logger.warn(
      { err: error, catalog: refOf(catalog), type, reason, message },
      'could not record a Kubernetes Event',
    );
  }
}
