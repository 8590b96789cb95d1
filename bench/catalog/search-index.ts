// Benchmark of the catalog search index (api/src/catalog/search), in process: build time, memory, and
// query latency over a realistic query mix, for (a) every brand buildable from the brand list fixtures and
// (b) a generated 100k-brand catalog. `node dist/bench/catalog/search-index.js` (add --expose-gc for the
// most exact memory figures; without it the benchmark obtains gc through V8 flags when it can).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { CatalogBrand } from '#core/catalog/model.js';
import { BrandSearchIndex } from '../../api/src/features/catalog/search/index.js';
import { BRANDS_DIR, loadAllRealBrands } from '../../testkit/real-brands.js';
import { queryMix, syntheticBrands, type BenchQuery } from '../../testkit/synthetic-brands.js';

const TARGETS = { p99Ms: 2, buildMs: 2000, memoryMb: 150 };
const SYNTHETIC_SIZE = 100_000;
const QUERIES = 3000;
const ROUNDS = 3;
const LIMIT = 25;

function obtainGc(): { gc: (() => void) | undefined; how: string } {
  const exposed = globalThis.gc;
  if (typeof exposed === 'function') return { gc: () => void exposed(), how: '--expose-gc' };
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc: unknown = vm.runInNewContext('gc');
    if (typeof gc === 'function') return { gc: gc as () => void, how: 'v8.setFlagsFromString' };
  } catch {
    // falls through: memory figures are then only indicative
  }
  return { gc: undefined, how: 'unavailable (memory figures include garbage)' };
}

/** JS heap plus typed-array backing stores, which V8 keeps outside the JS heap. */
function memory(gc: (() => void) | undefined): number {
  gc?.();
  gc?.();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const percentile = (sorted: Float64Array, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const round = (value: number, digits = 3) => Number(value.toFixed(digits));

function measureQueries(index: BrandSearchIndex, queries: BenchQuery[]) {
  // Queries whose exact matches did not fill the limit ran the typo-tolerant fallback too: reported apart.
  const fellBack = new Set<BenchQuery>();
  const run = (query: BenchQuery) => {
    const result = index.search(query.q, {
      limit: LIMIT,
      ...(query.platform && { platform: query.platform }),
      ...(query.near && { near: query.near }),
    });
    if (result.exact < LIMIT && query.q.trim().length >= 2) fellBack.add(query);
    return result.brands.length;
  };
  let sink = 0;
  for (const query of queries) sink += run(query); // warm-up: JIT, and the same work as the timed rounds
  const samples = new Float64Array(queries.length * ROUNDS);
  const byKind = new Map<string, number[]>();
  const fallback: number[] = [];
  const cpuStart = process.cpuUsage();
  for (let r = 0; r < ROUNDS; r++) {
    queries.forEach((query, i) => {
      const start = process.hrtime.bigint();
      sink += run(query);
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      samples[r * queries.length + i] = ms;
      let list = byKind.get(query.kind);
      if (!list) byKind.set(query.kind, (list = []));
      list.push(ms);
      if (fellBack.has(query)) fallback.push(ms);
    });
  }
  const cpu = process.cpuUsage(cpuStart);
  const fallbackSorted = Float64Array.from(fallback).sort();
  samples.sort();
  const kinds = Object.fromEntries(
    [...byKind].map(([kind, list]) => {
      const sorted = Float64Array.from(list).sort();
      return [
        kind,
        {
          p50Ms: round(percentile(sorted, 50)),
          p99Ms: round(percentile(sorted, 99)),
          maxMs: round(sorted[sorted.length - 1]!),
        },
      ];
    }),
  );
  return {
    samples: samples.length,
    p50Ms: round(percentile(samples, 50)),
    p99Ms: round(percentile(samples, 99)),
    maxMs: round(samples[samples.length - 1]!),
    cpuUsPerQuery: round((cpu.user + cpu.system) / samples.length, 1),
    fallback: {
      samples: fallback.length,
      p50Ms: round(percentile(fallbackSorted, 50)),
      p99Ms: round(percentile(fallbackSorted, 99)),
      maxMs: round(fallbackSorted[fallbackSorted.length - 1] ?? 0),
    },
    kinds,
    resultsReturned: sink,
  };
}

function benchSet(label: string, brands: CatalogBrand[], gc: (() => void) | undefined) {
  const before = memory(gc);
  let start = performance.now();
  let index = BrandSearchIndex.build(brands);
  const coldBuildMs = performance.now() - start;
  const memoryMb = (memory(gc) - before) / 1024 / 1024;
  const warm: number[] = [];
  for (let i = 0; i < 3; i++) {
    start = performance.now();
    index = BrandSearchIndex.build(brands);
    warm.push(performance.now() - start);
  }
  const queries = measureQueries(index, queryMix(brands, QUERIES));
  return {
    label,
    brands: index.size,
    maxAliases: brands.reduce((max, b) => Math.max(max, b.aliases.length), 0),
    coldBuildMs: round(coldBuildMs, 1),
    warmBuildMs: round(warm.sort((a, b) => a - b)[1]!, 1),
    memoryMb: round(memoryMb, 1),
    queries,
  };
}

export async function runSearchIndexBench(): Promise<Record<string, unknown>> {
  const { gc, how } = obtainGc();
  let start = performance.now();
  const { brands: real, grouping } = await loadAllRealBrands();
  const loadMs = performance.now() - start;
  start = performance.now();
  const synthetic = syntheticBrands(real, SYNTHETIC_SIZE);
  const generateMs = performance.now() - start;
  const realResult = benchSet('fixture lists (test/fixtures/brands, grouped by FHIR URL)', real, gc);
  const syntheticResult = benchSet(`synthetic ${SYNTHETIC_SIZE / 1000}k`, synthetic, gc);
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
  return {
    node: process.version,
    gc: how,
    realGrouping: grouping,
    loadRealMs: round(loadMs, 1),
    generateSyntheticMs: round(generateMs, 1),
    targets: TARGETS,
    sets: [realResult, syntheticResult],
    verdict: {
      p99: met(syntheticResult.queries.p99Ms <= TARGETS.p99Ms),
      fallbackP99: met(syntheticResult.queries.fallback.p99Ms <= TARGETS.p99Ms),
      build: met(syntheticResult.coldBuildMs <= TARGETS.buildMs),
      memory: met(syntheticResult.memoryMb <= TARGETS.memoryMb),
    },
  };
}

function printTable(result: Record<string, unknown>): void {
  const sets = result.sets as ReturnType<typeof benchSet>[];
  const verdict = result.verdict as Record<string, string>;
  console.log(
    `catalog search index, node ${String(result.node)}, gc: ${String(result.gc)}, limit ${LIMIT}, ${QUERIES} queries × ${ROUNDS} rounds`,
  );
  console.log(`real set grouped by: ${String(result.realGrouping)}`);
  const rows = sets.map((s) => ({
    set: s.label,
    brands: s.brands,
    'build ms (cold/warm)': `${s.coldBuildMs} / ${s.warmBuildMs}`,
    'memory MB': s.memoryMb,
    'p50 ms': s.queries.p50Ms,
    'p99 ms': s.queries.p99Ms,
    'max ms': s.queries.maxMs,
    'fallback p99 ms': s.queries.fallback.p99Ms,
    'CPU µs/query': s.queries.cpuUsPerQuery,
  }));
  rows.push({
    set: 'target at 100k',
    brands: SYNTHETIC_SIZE,
    'build ms (cold/warm)': `≤ ${TARGETS.buildMs}`,
    'memory MB': TARGETS.memoryMb,
    'p50 ms': NaN,
    'p99 ms': TARGETS.p99Ms,
    'max ms': NaN,
    'fallback p99 ms': TARGETS.p99Ms,
    'CPU µs/query': NaN,
  });
  console.table(rows);
  console.log(
    `100k verdict: p99 ≤ ${TARGETS.p99Ms} ms ${verdict.p99}; fallback p99 ≤ ${TARGETS.p99Ms} ms ${verdict.fallbackP99}; build ≤ ${TARGETS.buildMs / 1000} s ${verdict.build}; memory ≤ ${TARGETS.memoryMb} MB ${verdict.memory}`,
  );
  for (const s of sets) {
    console.log(`\n${s.label}: latency by query kind`);
    console.table(s.queries.kinds);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!existsSync(BRANDS_DIR)) throw new Error(`brand list fixtures not found: ${BRANDS_DIR}`);
  printTable(await runSearchIndexBench());
}
