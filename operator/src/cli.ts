// `portico-operator`: the catalog pipeline from the command line. `import -f <BrandCatalog file>` runs the
// whole reconcile without a cluster (file: and inline sources too) and publishes under the file's own
// namespace/name, against MONGODB_URI or the embedded database, PORTICO_OBJECT_STORAGE and REDIS_URL.
import { parseArgs } from 'node:util';
import { parseCatalogRef } from '#core/config.js';
import { loadOperatorConfig } from './config.js';
import { importCatalogFile, type ImportReport } from './import-file.js';
import { openPublishing } from './publishing.js';

const USAGE = `Usage:
  portico-operator run                                  the controller (KUBECONFIG or in-cluster credentials)
  portico-operator import -f <BrandCatalog file> [--catalog <namespace>/<name>] [--json]

Runs the catalog pipeline once (fetch, parse, normalise, deduplicate, render logos, write and activate a
snapshot) and prints a summary; the snapshot is published under the file's own namespace/name unless --catalog
names another. Exits non-zero on failure, or with 3 when the snapshot was held back
(brand count below spec.rollout.minBrandRatioPercent of the active one).`;

function summary(report: ImportReport): string {
  const lines = [`catalog ${report.catalog.namespace}/${report.catalog.name}`];
  for (const s of report.sources)
    lines.push(
      `  source ${s.name} (${s.format}): ${s.rowsRead} rows read, ${s.rejected} rejected${s.rejections.length ? ` (${s.rejections.slice(0, 3).join('; ')})` : ''}`,
    );
  lines.push(`  brands: ${report.brandCount}, duplicates merged: ${report.duplicatesMerged}`);
  const reasons = Object.entries(report.logos.reasons).map(([reason, count]) => `${reason} ${count}`);
  lines.push(
    `  logos: ${report.logos.rendered} rendered, ${report.logos.fallback} fallback, ${report.logos.failed} failed${reasons.length ? ` (${reasons.join(', ')})` : ''}`,
  );
  lines.push(
    `  artwork: ${report.logos.artworks.rendered} rendered now, ${report.logos.artworks.reused} reused from storage`,
  );
  lines.push(
    `  snapshot: ${report.snapshot.id} (${report.snapshot.created ? 'new' : 'unchanged'}), ${report.active ? 'active' : `NOT activated: ${report.stalled?.message}`}`,
  );
  if (report.diff)
    lines.push(`  changes: +${report.diff.added.length} −${report.diff.removed.length} ~${report.diff.changed.length}`);
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      file: { type: 'string', short: 'f' },
      catalog: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals[0] === 'run') {
    await import('./main.js');
    return -1; // the controller keeps the process alive
  }
  if (positionals[0] !== 'import' || !values.file) {
    console.error(USAGE);
    return 2;
  }
  const ref = values.catalog === undefined ? undefined : parseCatalogRef(values.catalog);
  if (values.catalog !== undefined && !ref) {
    console.error('--catalog must be <namespace>/<name> (Kubernetes names)');
    return 2;
  }
  const publishing = await openPublishing(loadOperatorConfig(), (m) => console.error(m));
  try {
    const report = await importCatalogFile(values.file, { ...publishing, ...(ref && { ref }) });
    console.log(values.json ? JSON.stringify(report, null, 2) : summary(report));
    return report.active ? 0 : 3;
  } finally {
    await publishing.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    console.error(`portico-operator: ${(error as Error).message}`);
    process.exit(1);
  },
);
