// reconcile(catalog): make the published catalog match one BrandCatalog, idempotently, in named steps:
// a deleted catalog is finalized (its snapshots, endpoint health and the artwork only it used go); otherwise
// the finalizer is ensured, the endpoint checks are told what the spec asks for (health/monitor.ts), a
// suspended catalog only says so, and a catalog that is due is loaded (every source fetched and parsed),
// published (pipeline/publish.ts), and its outcome written to status and as an Event (status.ts). It returns when to
// look again; errors propagate to the caller, which records them and backs off.
import type { CatalogRef } from '#core/catalog/snapshots.js';
import type { ObjectStorage } from '#core/object-storage/types.js';
import type { HealthMonitor } from '../health/monitor.js';
import { parseDuration, type SourceSpec } from '../shared/catalog-spec.js';
import { loadSource } from '../pipeline/index.js';
import { publishCatalog, type PublishReport } from '../pipeline/publish.js';
import type { LoadedSource } from '../pipeline/types.js';
import { FINALIZER, keyOf, refOf, type BrandCatalogObject } from '../shared/kube.js';
import {
  clip,
  reportFailure,
  reportPublished,
  reportReconciling,
  reportSuspended,
  SourceError,
  statusOf,
  type StatusDeps,
} from './status.js';

export interface ReconcileDeps extends StatusDeps {
  storage: ObjectStorage;
  /** https only, through the SSRF filter; the in-cluster controller never reads files. */
  fetchText: (url: string) => Promise<string>;
  announce?: (ref: CatalogRef, snapshotId: string) => Promise<void>;
  /** The endpoint checks (spec.healthChecks); absent, none run. */
  health?: HealthMonitor;
}

/** Milliseconds until the catalog should be reconciled again; undefined: only on change. */
export type Requeue = number | undefined;

export async function reconcile(catalog: BrandCatalogObject, deps: ReconcileDeps): Promise<Requeue> {
  if (catalog.metadata.deletionTimestamp) return finalize(catalog, deps);
  const finalizers = catalog.metadata.finalizers ?? [];
  if (!finalizers.includes(FINALIZER)) {
    await deps.kube.setFinalizers(catalog, [...finalizers, FINALIZER]);
    return undefined; // the finalizer change comes back through the watch and enqueues the catalog again
  }
  await followHealthChecks(catalog, deps);
  if (catalog.spec.suspend) {
    await reportSuspended(catalog, deps);
    return undefined;
  }
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
