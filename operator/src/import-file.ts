// Runs the pipeline for a BrandCatalog file without a cluster: the command line's `import -f`, and the
// API's demo catalog. Sources are file: URLs (relative to the file), inline text or https URLs.
import type { CatalogRef, SnapshotStore } from '#core/catalog/snapshots.js';
import type { ObjectStorage } from '#core/object-storage/types.js';
import { loadCatalogFile, readLocalSource, type SourceSpec } from './shared/catalog-spec.js';
import { loadSource } from './pipeline/index.js';
import { fetchSourceList } from './pipeline/sources/fetch.js';
import { publishCatalog, type PublishInput, type PublishReport } from './pipeline/publish.js';
import type { LoadedSource } from './pipeline/types.js';

export interface ImportOptions {
  store: SnapshotStore;
  storage: ObjectStorage;
  /** Publish under this catalog instead of the file's own namespace/name. */
  ref?: CatalogRef;
  announce?: (ref: CatalogRef, snapshotId: string) => Promise<void>;
  fetchText?: (url: string) => Promise<string>;
  /** Concurrency and fetch limits of logo rendering; sizes and the favicon fallback come from the file's spec.logos. */
  logoOptions?: PublishInput['logoOptions'];
}

export interface ImportReport extends PublishReport {
  catalog: CatalogRef;
  sources: { name: string; format: string; rowsRead: number; rejected: number; rejections: string[] }[];
}

async function sourceText(
  source: SourceSpec,
  baseDir: string,
  fetchText: (url: string) => Promise<string>,
): Promise<string> {
  const local = await readLocalSource(source, baseDir);
  if (local !== undefined) return local;
  if (source.url) return fetchText(source.url);
  throw new Error(`source "${source.name}": configMapRef sources need a cluster`);
}

export async function importCatalogFile(file: string, options: ImportOptions): Promise<ImportReport> {
  const catalog = await loadCatalogFile(file);
  const ref = options.ref ?? { namespace: catalog.namespace, name: catalog.name };
  const loaded: LoadedSource[] = [];
  for (const source of catalog.spec.sources)
    loaded.push(
      await loadSource(source, () => sourceText(source, catalog.baseDir, options.fetchText ?? fetchSourceList)),
    );
  const report = await publishCatalog({
    ref,
    spec: catalog.spec,
    sources: loaded,
    store: options.store,
    storage: options.storage,
    ...(options.logoOptions && { logoOptions: options.logoOptions }),
    ...(options.announce && { announce: (id: string) => options.announce!(ref, id) }),
  });
  return {
    ...report,
    catalog: ref,
    sources: catalog.spec.sources.map((s, i) => ({
      name: s.name,
      format: s.format,
      rowsRead: loaded[i]!.parsed.rows.length + loaded[i]!.parsed.rejected,
      rejected: loaded[i]!.parsed.rejected,
      rejections: loaded[i]!.parsed.rejections,
    })),
  };
}
