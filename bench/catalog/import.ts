// Benchmark of a full catalog import: every brand list fixture (test/fixtures/brands) that the operator reads
// (loadAllRealSources: its own parsers, nothing parsed for the benchmark alone) plus the four HL7 example
// bundles, read, parsed, merged and published through publishCatalog into the embedded database
// (a database of its own, dropped afterwards) with file object storage in a temporary directory; then the
// same import again (unchanged: nothing rendered, snapshot reused). The work runs in a child process, so its
// peak RSS (process.resourceUsage().maxRSS, and VmHWM) is the import's alone; the embedded database is a
// process of its own and not counted. `node dist/bench/catalog/import.js`.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOGO_SIZES } from '#core/catalog/model.js';
import { SnapshotStore } from '#core/catalog/snapshots.js';
import { systemClock } from '#core/clock.js';
import { loadConfig } from '../../api/src/config.js';
import { startEmbeddedDatabase } from '#core/infra/devdb.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { connectMongo } from '#core/infra/mongo.js';
import { FileObjectStorage } from '#core/object-storage/index.js';
import { parseSource, type LoadedSource } from '../../operator/src/pipeline/index.js';
import { publishCatalog, type PublishReport } from '../../operator/src/pipeline/publish.js';
import { loadAllRealSources, readBrandFile } from '../../testkit/real-brands.js';

const TARGETS = { seconds: 20, rssMb: 400 };

interface ChildResult {
  sources: number;
  rows: number;
  loadSeconds: number;
  importSeconds: number;
  reimportSeconds: number;
  maxRssMb: number;
  vmHwmMb: number | null;
  first: Pick<PublishReport, 'brandCount' | 'duplicatesMerged' | 'logos'> & { created: boolean };
  again: { created: boolean; artworks: PublishReport['logos']['artworks'] };
}

function hl7Bundles(firstPriority: number): LoadedSource[] {
  return [1, 2, 3, 4].map((i) => ({
    name: `hl7-example${i}`,
    priority: firstPriority + i,
    platformType: 'OTHER',
    parsed: parseSource('smart-brands-bundle', readBrandFile(`smart-app-launch-examples/Bundle-example${i}.json`)),
  }));
}

const vmHwmMb = (): number | null => {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
};

/** The import itself (child process): prints one JSON line. */
async function child(): Promise<void> {
  const config = loadConfig({ PORTICO_MONGODB_TIMEOUT_MS: '30000', ...process.env, LOG_LEVEL: 'warn' }); // bulk work on the embedded database: see bench/config.ts
  const embedded = await startEmbeddedDatabase({
    port: config.devdbPort,
    dataDir: config.dataDir,
    cacheDir: config.cacheDir,
  });
  const mongo = await connectMongo(embedded.uri, `bench_import_${process.pid}`, {
    timeoutMs: config.mongodbTimeoutMs,
    longTimeoutMs: config.mongodbLongTimeoutMs,
  });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'portico-bench-import-'));
  try {
    await mongo.db.dropDatabase();
    const store = new SnapshotStore(mongo.db, await documentLocksFor(mongo.db, undefined), systemClock);
    await store.init();
    const storage = new FileObjectStorage(dir);
    const publish = (sources: LoadedSource[]) =>
      publishCatalog({
        ref: { namespace: 'bench', name: 'import' },
        spec: {
          rollout: { retainSnapshots: 2, minBrandRatioPercent: 0 },
          logos: { sizes: [...LOGO_SIZES], faviconFallback: false },
        },
        sources,
        store,
        storage,
      });

    let started = performance.now();
    const real = loadAllRealSources();
    const sources = [...real, ...hl7Bundles(real.length)];
    const loadSeconds = (performance.now() - started) / 1000;
    const first = await publish(sources);
    const importSeconds = (performance.now() - started) / 1000;

    started = performance.now();
    const again = await publish([...loadAllRealSources(), ...hl7Bundles(real.length)]);
    const reimportSeconds = (performance.now() - started) / 1000;

    const result: ChildResult = {
      sources: sources.length,
      rows: sources.reduce((sum, s) => sum + s.parsed.rows.length, 0),
      loadSeconds,
      importSeconds,
      reimportSeconds,
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      vmHwmMb: vmHwmMb(),
      first: {
        brandCount: first.brandCount,
        duplicatesMerged: first.duplicatesMerged,
        logos: first.logos,
        created: first.snapshot.created,
      },
      again: { created: again.snapshot.created, artworks: again.logos.artworks },
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await mongo.db.dropDatabase().catch(() => {});
    await mongo.close();
    await embedded.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function runChild(): Promise<ChildResult> {
  const script = fileURLToPath(import.meta.url);
  const proc = spawn(process.execPath, ['--enable-source-maps', script, '--child'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => {
      const line = out.trim().split('\n').pop();
      if (code !== 0 || !line) return reject(new Error(`import benchmark child exited with ${code}`));
      resolve(JSON.parse(line) as ChildResult);
    });
  });
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));
const met = (ok: boolean) => (ok ? 'met' : 'MISSED');

async function main(): Promise<void> {
  const r = await runChild();
  const peak = Math.max(r.maxRssMb, r.vmHwmMb ?? 0);
  console.log(
    `full catalog import: ${r.sources} sources (every brand list fixture in a format the operator reads, through its own parsers, + 4 HL7 example bundles), ${r.rows} rows → ${r.first.brandCount} brands (${r.first.duplicatesMerged} duplicates merged)`,
  );
  console.log(
    `node ${process.version}, ${os.availableParallelism()} cores, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}, embedded database (its own process, not in the RSS), file object storage`,
  );
  const logos = r.first.logos;
  const reasons =
    Object.entries(logos.reasons)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  // The lists carry no artwork: the logo work is the HL7 bundles' references alone.
  console.log(
    `logo work included: the HL7 bundles' logo references only (the lists carry none), favicon fallback off, 4 sizes × PNG + WebP`,
  );
  console.log(
    `  ${logos.rendered} brands got a rendered logo from ${logos.artworks.rendered} artworks (data: URLs); ${logos.failed} references failed (${reasons}: https: logos on example hosts, unreachable offline)`,
  );
  console.log(
    `  re-import rendered ${r.again.artworks.rendered} and reused ${r.again.artworks.reused} artworks; snapshot ${r.again.created ? 'NEW' : 'reused'}`,
  );
  console.table([
    {
      measure: 'import wall time (read + parse + publish), s',
      value: round(r.importSeconds, 2),
      target: `≤ ${TARGETS.seconds}`,
      verdict: met(r.importSeconds <= TARGETS.seconds),
    },
    { measure: '  of which reading and parsing the lists, s', value: round(r.loadSeconds, 2), target: '', verdict: '' },
    { measure: 're-import, unchanged, s', value: round(r.reimportSeconds, 2), target: '', verdict: '' },
    {
      measure: 'peak RSS of the import process, MB',
      value: round(peak),
      target: `≤ ${TARGETS.rssMb}`,
      verdict: met(peak <= TARGETS.rssMb),
    },
  ]);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--child')) await child();
  else await main();
}
