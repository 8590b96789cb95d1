// The end of the pipeline, shared by the controller and the command line: merged brands → logos → an
// immutable snapshot → activation (guarded against a collapse in brand count) → retention → announcement.
import type { CatalogBrand } from '#core/catalog/model.js';
import { diffBrands, type CatalogRef, type SnapshotDiff, type SnapshotStore } from '#core/catalog/snapshots.js';
import type { ObjectStorage } from '#core/object-storage/types.js';
import type { BrandCatalogSpec } from '../shared/catalog-spec.js';
import { mergeSources, type SourceSummary } from './dedupe.js';
import { storeLogos, type LogoSettings } from './logos.js';
import type { LoadedSource } from './types.js';

export interface PublishInput {
  ref: CatalogRef;
  /** `logos` (sizes, faviconFallback) as the BrandCatalog gives it; absent: every size, no favicon fallback. */
  spec: Pick<BrandCatalogSpec, 'rollout'> & { logos?: Partial<BrandCatalogSpec['logos']> };
  sources: LoadedSource[];
  store: SnapshotStore;
  storage: ObjectStorage;
  /** Concurrency and fetch limits of logo rendering (defaults suit production). */
  logoOptions?: Omit<LogoSettings, 'sizes' | 'faviconFallback'>;
  /** Tells API replicas at once (Redis); without it they find the new snapshot by polling. */
  announce?: (snapshotId: string) => Promise<void>;
}

export interface PublishReport {
  brandCount: number;
  duplicatesMerged: number;
  perSource: SourceSummary[];
  /**
   * Brands with their own artwork (`rendered`), with a favicon instead (`fallback`), whose logo reference
   * could not be used (`failed`); distinct artworks rendered now or reused from storage; failures by reason.
   */
  logos: {
    rendered: number;
    fallback: number;
    failed: number;
    errors: string[];
    artworks: { rendered: number; reused: number };
    reasons: Record<string, number>;
  };
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
  const requests = merged.brands.map((b) => ({
    brandId: b.id,
    portalUrl: b.portalUrl,
    fhirBaseUrl: b.fhirBaseUrl,
    ...(b.logoUrl !== undefined && { logoUrl: b.logoUrl }),
  }));
  const logos = await storeLogos(storage, requests, {
    ...input.logoOptions,
    ...(spec.logos?.sizes && { sizes: spec.logos.sizes }),
    faviconFallback: spec.logos?.faviconFallback ?? false,
  });
  // A logo that cannot be fetched or read is the source's problem: counted, never fatal. Object storage
  // failing is ours: publishing now would strip artwork from every brand, so the run fails and is retried
  // while the previous snapshot stays active.
  const storageFailures = (logos.reasons.storage ?? 0) + (logos.reasons['favicon:storage'] ?? 0);
  if (storageFailures > 0)
    throw new Error(
      `object storage failed for ${storageFailures} logos (${logos.errors.find((e) => /stor/.test(e)) ?? 'see the operator log'}); not publishing`,
    );
  const brands: CatalogBrand[] = merged.brands.map(({ logoUrl: _logoUrl, ...brand }) => ({
    ...brand,
    logo: logos.logos.get(brand.id) ?? null,
  }));

  const { header, created } = await store.write(ref, brands);
  const report: PublishReport = {
    brandCount: brands.length,
    duplicatesMerged: merged.duplicatesMerged,
    perSource: merged.perSource,
    logos: {
      rendered: logos.rendered,
      fallback: logos.fallback,
      failed: logos.failed,
      errors: logos.errors,
      artworks: logos.artworks,
      reasons: logos.reasons,
    },
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
