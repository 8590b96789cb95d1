// What the operator says of a BrandCatalog while it reconciles it: conditions and counts in its status, and
// Kubernetes Events (docs/operator.md). reconcile.ts decides what to do; this writes what came of it. An Event that
// cannot be written is counted and logged, never fatal.
import type { Logger } from 'pino';
import type { SnapshotStore } from '#core/catalog/snapshots.js';
import type { Clock } from '#core/clock.js';
import { parseDuration } from '../shared/catalog-spec.js';
import type { PublishReport } from '../pipeline/publish.js';
import { setCondition, type Condition } from './conditions.js';
import { keyOf, refOf, type BrandCatalogObject, type KubeClient } from '../shared/kube.js';
import type { OperatorMetrics } from '../shared/metrics.js';

export const COMPONENT = 'portico-catalog-operator';

/** What reporting needs of the reconciler's dependencies. */
export interface StatusDeps {
  kube: KubeClient;
  store: SnapshotStore;
  clock: Clock;
  logger: Logger;
  metrics: OperatorMetrics;
}

/** Status and Event messages stay short: they are bounded by the CRD and readable by anyone who can list catalogs. */
export const clip = (message: string, max = 1024) => (message.length > max ? `${message.slice(0, max - 1)}…` : message);

type Status = {
  conditions?: Condition[];
  observedGeneration?: number;
  lastSyncTime?: string;
  sources?: { name: string; error?: string }[];
};

/** A source that could not be loaded, named so status can say which. */
export class SourceError extends Error {
  constructor(
    readonly source: string,
    message: string,
  ) {
    super(message);
  }
}

export const statusOf = (catalog: BrandCatalogObject): Status => catalog.status ?? {};

export async function reportSuspended(catalog: BrandCatalogObject, deps: StatusDeps): Promise<void> {
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
}

export async function reportReconciling(catalog: BrandCatalogObject, deps: StatusDeps): Promise<Condition[]> {
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

export async function reportFailure(
  catalog: BrandCatalogObject,
  reconciling: Condition[],
  error: Error,
  deps: StatusDeps,
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

export async function reportPublished(
  catalog: BrandCatalogObject,
  reconciling: Condition[],
  report: PublishReport,
  deps: StatusDeps,
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
  deps: StatusDeps,
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
