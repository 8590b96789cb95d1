// The end of the pipeline, shared by the controller and the command line: merged brands → logos → an
// immutable snapshot → activation (guarded against a collapse in brand count) → retention → announcement.
import type { CatalogBrand } from '../../../api/src/catalog/model.js';
import { diffBrands, type CatalogRef, type SnapshotDiff, type SnapshotStore } from '../../../api/src/catalog/snapshots.js';
import type { ObjectStorage } from '../../../api/src/infra/object-storage/types.js';
import type { BrandCatalogSpec } from './catalog-spec.js';
import { mergeSources, type SourceSummary } from './dedupe.js';
import { storeLogos } from './logos.js';
import type { LoadedSource } from './types.js';

export interface PublishInput {
  ref: CatalogRef;
  spec: Pick<BrandCatalogSpec, 'rollout'>;
  sources: LoadedSource[];
  store: SnapshotStore;
  storage: ObjectStorage;
  /** Tells API replicas at once (Redis); without it they find the new snapshot by polling. */
  announce?: (snapshotId: string) => Promise<void>;
}

export interface PublishReport {
  brandCount: number;
  duplicatesMerged: number;
  perSource: SourceSummary[];
  logos: { rendered: number; fallback: number; failed: number; errors: string[] };
  snapshot: { id: string; created: boolean; brandCount: number; publishedAt: Date };
  /** True when the snapshot is the active one after this run. */
  active: boolean;
  /** Set when the snapshot was not activated. */
  stalled?: { reason: 'BrandCountDrop'; message: string };
  diff: SnapshotDiff | null;
  pruned: string[];
}

export class ActivationConflictError extends Error {}

export async function publishCatalog(input: PublishInput): Promise<PublishReport> {
  const { ref, spec, store, storage } = input;
  const merged = mergeSources(input.sources);
  const withLogo = merged.brands.filter((b) => b.logoUrl !== undefined).map((b) => ({ brandId: b.id, logoUrl: b.logoUrl! }));
  const logos = await storeLogos(storage, withLogo);
  const brands: CatalogBrand[] = merged.brands.map(({ logoUrl: _logoUrl, ...brand }) => ({ ...brand, logo: logos.logos.get(brand.id) ?? null }));

  const { header, created } = await store.write(ref, brands);
  const report: PublishReport = {
    brandCount: brands.length,
    duplicatesMerged: merged.duplicatesMerged,
    perSource: merged.perSource,
    logos: { rendered: logos.rendered, fallback: 0, failed: logos.failed, errors: logos.errors },
    snapshot: { id: header.id, created, brandCount: header.brandCount, publishedAt: header.createdAt },
    active: false,
    diff: null,
    pruned: [],
  };

  const pointer = await store.active(ref);
  if (pointer?.snapshotId === header.id) {
    report.active = true;
    return report;
  }
  const current = pointer ? await store.load(pointer.snapshotId) : null;
  if (current) {
    report.diff = diffBrands(current.brands, brands);
    const floor = (current.brandCount * spec.rollout.minBrandRatioPercent) / 100;
    if (header.brandCount < floor) {
      report.stalled = {
        reason: 'BrandCountDrop',
        message: `snapshot ${header.id} has ${header.brandCount} brands, below ${spec.rollout.minBrandRatioPercent}% of the active ${current.brandCount}; not activated`,
      };
      return report;
    }
  }
  if (!(await store.activate(ref, header.id, pointer?.snapshotId ?? null))) {
    throw new ActivationConflictError('another publisher activated a snapshot of this catalog meanwhile; retry');
  }
  report.active = true;
  report.pruned = await store.prune(ref, spec.rollout.retainSnapshots);
  await input.announce?.(header.id);
  return report;
}
