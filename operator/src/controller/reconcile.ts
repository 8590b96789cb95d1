// reconcile(catalog): make the published catalog match one BrandCatalog, idempotently. Deletion runs the
// finalizer (the catalog's snapshots and the artwork only it used go away); otherwise the sources are
// fetched, run through the pipeline and published, and the outcome is written to status and an Event.
// It returns when to look again; errors propagate to the caller, which records them and backs off.
import type { Logger } from 'pino';
import type { SnapshotStore } from '../../../core/src/catalog/snapshots.js';
import type { Clock } from '../../../core/src/clock.js';
import type { ObjectStorage } from '../../../core/src/object-storage/types.js';
import { parseDuration, type SourceSpec } from '../pipeline/catalog-spec.js';
import { loadSource } from '../pipeline/index.js';
import { publishCatalog, type PublishReport } from '../pipeline/publish.js';
import type { LoadedSource } from '../pipeline/types.js';
import { setCondition, type Condition } from './conditions.js';
import { FINALIZER, type BrandCatalogObject, type KubeClient } from './kube.js';

export const COMPONENT = 'portico-catalog-operator';

/** Status and Event messages stay short: they are bounded by the CRD and readable by anyone who can list catalogs. */
const clip = (message: string, max = 1024) => (message.length > max ? `${message.slice(0, max - 1)}…` : message);

export interface ReconcileDeps {
  kube: KubeClient;
  store: SnapshotStore;
  storage: ObjectStorage;
  clock: Clock;
  logger: Logger;
  /** https only, through the SSRF filter; the in-cluster controller never reads files. */
  fetchText: (url: string) => Promise<string>;
  announce?: (ref: { namespace: string; name: string }, snapshotId: string) => Promise<void>;
}

/** Milliseconds until the catalog should be reconciled again; undefined: only on change. */
export type Requeue = number | undefined;


export async function reconcile(catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<Requeue> {
  const { kube } = deps;
  const ref = { namespace: catalog.metadata.namespace, name: catalog.metadata.name };
  const finalizers = catalog.metadata.finalizers ?? [];

  if (catalog.metadata.deletionTimestamp) {
    if (!finalizers.includes(FINALIZER)) return undefined;
    // Objects first, documents last: a failure halfway leaves the snapshots that say what to delete.
    const orphaned = await deps.store.orphanedArtwork(ref);
    for (const key of orphaned) await deps.storage.delete(key);
    await deps.store.deleteCatalog(ref);
    deps.logger.info({ catalog: ref, objectsDeleted: orphaned.length }, 'catalog deleted: snapshots and artwork removed');
    await kube.setFinalizers(catalog, finalizers.filter((f) => f !== FINALIZER));
    return undefined;
  }
  if (!finalizers.includes(FINALIZER)) {
    await kube.setFinalizers(catalog, [...finalizers, FINALIZER]);
    return undefined; // the finalizer change comes back through the watch and enqueues the catalog again
  }

  const status = (catalog.status ?? {}) as { conditions?: Condition[]; observedGeneration?: number; lastSyncTime?: string };
  const now = deps.clock.now();
  const generation = catalog.metadata.generation;
  const interval = parseDuration(catalog.spec.refreshInterval);
  if (catalog.spec.suspend) {
    await kube.patchStatus(catalog, {
      observedGeneration: generation,
      conditions: setCondition(status.conditions ?? [], { type: 'Reconciling', status: 'False', reason: 'Suspended', message: 'spec.suspend is true', observedGeneration: generation }, now),
    });
    return undefined;
  }
  const lastSync = status.lastSyncTime ? new Date(status.lastSyncTime).getTime() : 0;
  const due = lastSync + interval - now.getTime();
  if (status.observedGeneration === generation && due > 0 && !isFailing(status.conditions)) return due;

  let conditions = setCondition(status.conditions ?? [], { type: 'Reconciling', status: 'True', reason: 'Publishing', message: 'fetching sources and publishing a snapshot', observedGeneration: generation }, now);
  await kube.patchStatus(catalog, { conditions });

  let report: PublishReport;
  const sourceErrors: Record<string, string> = {};
  try {
    const sources: LoadedSource[] = [];
    for (const source of catalog.spec.sources) {
      try {
        sources.push(await loadSource(source, () => sourceText(source, catalog, deps)));
      } catch (error) {
        sourceErrors[source.name] = clip((error as Error).message, 512);
        throw new Error(sourceErrors[source.name]);
      }
    }
    report = await publishCatalog({
      ref,
      spec: catalog.spec,
      sources,
      store: deps.store,
      storage: deps.storage,
      ...(deps.announce && { announce: (id: string) => deps.announce!(ref, id) }),
    });
  } catch (error) {
    const message = clip((error as Error).message);
    conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: 'ReconcileFailed', message, observedGeneration: generation }, deps.clock.now());
    conditions = setCondition(conditions, { type: 'Reconciling', status: 'True', reason: 'RetryingAfterError', message, observedGeneration: generation }, deps.clock.now());
    conditions = setCondition(conditions, { type: 'Stalled', status: 'False', reason: 'RetryingAfterError', message: 'the operator retries with backoff', observedGeneration: generation }, deps.clock.now());
    // The Event first: it must be told even if the status write fails too.
    await kube.event(catalog, 'Warning', 'ReconcileFailed', message, COMPONENT).catch((e: unknown) => deps.logger.warn({ err: e }, 'could not record an Event'));
    const previous = (status as { sources?: { name: string; error?: string }[] }).sources ?? [];
    const lastGood = (name: string) => {
      const { error: _error, ...counts } = previous.find((p) => p.name === name) ?? { name };
      return counts;
    };
    await kube.patchStatus(catalog, {
      observedGeneration: generation,
      conditions,
      // The last good counts stay; a failing source gains its error.
      sources: catalog.spec.sources.map((s) => ({ ...lastGood(s.name), name: s.name, ...(sourceErrors[s.name] && { error: sourceErrors[s.name] }) })),
    });
    throw error;
  }

  const at = deps.clock.now();
  const stalled = report.stalled;
  conditions = setCondition(conditions, { type: 'Reconciling', status: 'False', reason: stalled ? stalled.reason : 'Published', message: stalled ? stalled.message : `snapshot ${report.snapshot.id} is active`, observedGeneration: generation }, at);
  conditions = setCondition(conditions, { type: 'Stalled', status: stalled ? 'True' : 'False', reason: stalled ? stalled.reason : 'Published', message: stalled ? stalled.message : 'no problem', observedGeneration: generation }, at);
  conditions = setCondition(
    conditions,
    stalled
      ? { type: 'Ready', status: 'False', reason: stalled.reason, message: `${stalled.message}; the previous snapshot stays active`, observedGeneration: generation }
      : { type: 'Ready', status: 'True', reason: 'Published', message: `${report.brandCount} brands in snapshot ${report.snapshot.id}`, observedGeneration: generation },
    at,
  );
  const active = stalled ? await deps.store.active(ref) : undefined;
  const current = stalled ? (active ? await deps.store.header(active.snapshotId) : null) : null;
  await kube.patchStatus(catalog, {
    observedGeneration: generation,
    conditions,
    // What is served: a held-back build does not change the count users see.
    brandCount: stalled ? (current?.brandCount ?? 0) : report.brandCount,
    duplicatesMerged: report.duplicatesMerged,
    sources: report.perSource.map((s) => ({ name: s.name, rowsRead: s.rows, rejected: s.rejected, kept: s.kept })),
    logos: { rendered: report.logos.rendered, fallback: report.logos.fallback, failed: report.logos.failed },
    currentSnapshot: stalled
      ? current && { id: current.id, brandCount: current.brandCount, publishedAt: current.createdAt.toISOString() }
      : { id: report.snapshot.id, brandCount: report.snapshot.brandCount, publishedAt: report.snapshot.publishedAt.toISOString() },
    lastSyncTime: at.toISOString(),
    nextSyncTime: new Date(at.getTime() + interval).toISOString(),
  });
  if (stalled) await kube.event(catalog, 'Warning', stalled.reason, stalled.message, COMPONENT).catch(() => {});
  else if (report.snapshot.created) {
    const diff = report.diff ? ` (+${report.diff.added.length} −${report.diff.removed.length} ~${report.diff.changed.length})` : '';
    await kube.event(catalog, 'Normal', 'Published', `snapshot ${report.snapshot.id} with ${report.brandCount} brands${diff}`, COMPONENT).catch(() => {});
  }
  return interval;
}

const isFailing = (conditions: Condition[] | undefined) => conditions?.some((c) => c.type === 'Ready' && c.status === 'False' && c.reason === 'ReconcileFailed') ?? false;

async function sourceText(source: SourceSpec, catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<string> {
  if (source.inline !== undefined) return source.inline;
  if (source.configMapRef) return deps.kube.configMapValue(catalog.metadata.namespace, source.configMapRef.name, source.configMapRef.key);
  if (source.url?.startsWith('https://')) return deps.fetchText(source.url);
  throw new Error('only https:// URLs, configMapRef and inline sources can be read in a cluster');
}
