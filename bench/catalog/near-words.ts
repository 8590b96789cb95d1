// Micro-benchmark of the typo-tolerant fallback's word lookup (api/src/features/catalog/search/near-words.ts), in
// process: build time, memory after GC, and latency per query word, over the vocabulary of (a) every brand
// buildable from the brand list fixtures, (b) a generated 100k-brand catalog, and (c) random letter strings,
// a vocabulary with no shared structure that is larger than either (a stress case, not a target).
// Query words are vocabulary words of 4 letters or more with one or two random errors anywhere, the first
// letter included, and random non-words; shorter words are allowed no errors and cost nothing.
// `node --expose-gc dist/bench/catalog/near-words.js` (BENCH_WORDS=<n> per round, BENCH_ROUNDS=<n>).
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildLayout } from '../../api/src/features/catalog/search/layout.js';
import { allowedEdits, NearWords } from '../../api/src/features/catalog/search/near-words.js';
import { BRANDS_DIR, loadAllRealBrands } from '../../testkit/real-brands.js';
import { seededRandom, syntheticBrands, typo } from '../../testkit/synthetic-brands.js';

// Per word, so that a fallback query of several words plus candidate gathering stays within 2 ms.
const TARGETS = { p99Ms: 0.25, buildMs: 1000, memoryMb: 20 };
const WORDS = Number(process.env.BENCH_WORDS ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LETTERS = [...'abcdefghijklmnopqrstuvwxyz'];

type Gc = () => void;

/** JS heap plus typed-array backing stores, as bench/catalog/search-index.ts measures the index. */
function memory(gc: Gc): number {
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const percentile = (sorted: Float64Array, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const round = (value: number, digits = 3) => Number(value.toFixed(digits));

interface Word {
  kind: '1 error' | '2 errors' | 'non-word';
  text: string;
}

function queryWords(tokens: readonly string[], count: number, seed = 11): Word[] {
  const random = seededRandom(seed);
  const long = tokens.filter((t) => t.length >= 4);
  const words: Word[] = [];
  while (words.length < count) {
    const roll = random();
    let word: Word;
    if (roll < 0.1)
      word = {
        kind: 'non-word',
        text: Array.from({ length: 4 + Math.floor(random() * 9) }, () => LETTERS[Math.floor(random() * 26)]).join(''),
      };
    else {
      const once = typo(random, long[Math.floor(random() * long.length)]!, 0, LETTERS);
      word = roll < 0.6 ? { kind: '1 error', text: once } : { kind: '2 errors', text: typo(random, once, 0, LETTERS) };
    }
    if (word.text.length >= 4) words.push(word);
  }
  return words;
}

function stats(samples: number[]) {
  const sorted = Float64Array.from(samples).sort();
  return {
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted[sorted.length - 1]!),
  };
}

function benchSet(label: string, tokens: readonly string[], gc: Gc) {
  const before = memory(gc);
  let start = performance.now();
  let near = NearWords.build(tokens);
  const coldBuildMs = performance.now() - start;
  const memoryMb = (memory(gc) - before) / 1024 / 1024;
  const warm: number[] = [];
  for (let i = 0; i < 3; i++) {
    start = performance.now();
    near = NearWords.build(tokens);
    warm.push(performance.now() - start);
  }
  const words = queryWords(tokens, WORDS);
  const ids: number[] = [];
  const edits: number[] = [];
  let found = 0;
  const run = (word: string) => {
    ids.length = 0;
    edits.length = 0;
    near.find(word, ids, edits);
    found += ids.length;
  };
  for (const word of words) run(word.text); // warm-up: JIT, and the same work as the timed rounds
  found = 0;
  const all: number[] = [];
  const byKind = new Map<string, number[]>();
  const cpuStart = process.cpuUsage();
  for (let r = 0; r < ROUNDS; r++) {
    for (const word of words) {
      const t0 = process.hrtime.bigint();
      run(word.text);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      all.push(ms);
      const kind = `${word.kind}, ${allowedEdits(word.text.length)} allowed`;
      let list = byKind.get(kind);
      if (!list) byKind.set(kind, (list = []));
      list.push(ms);
    }
  }
  const cpu = process.cpuUsage(cpuStart);
  return {
    label,
    tokens: tokens.length,
    coldBuildMs: round(coldBuildMs, 1),
    warmBuildMs: round(warm.sort((a, b) => a - b)[1]!, 1),
    memoryMb: round(memoryMb, 2),
    ...stats(all),
    cpuUsPerWord: round((cpu.user + cpu.system) / all.length, 1),
    foundPerWord: round(found / all.length, 1),
    kinds: Object.fromEntries(
      [...byKind]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([kind, list]) => [kind, { words: list.length / ROUNDS, ...stats(list) }]),
    ),
  };
}

function randomTokens(count: number, seed = 5): string[] {
  const random = seededRandom(seed);
  const words = Array.from({ length: count }, () =>
    Array.from({ length: 3 + Math.floor(random() * 10) }, () => LETTERS[Math.floor(random() * 26)]).join(''),
  );
  return [...new Set(words)].sort();
}

async function main(gc: Gc): Promise<void> {
  const { brands: real } = await loadAllRealBrands();
  const sets = [
    benchSet('fixture lists (test/fixtures/brands)', buildLayout(real).tokens, gc),
    benchSet('synthetic 100k brands', buildLayout(syntheticBrands(real, 100_000)).tokens, gc),
    benchSet('random letters (stress)', randomTokens(120_000), gc),
  ];
  console.log(
    `near words, node ${process.version}, ${WORDS} words × ${ROUNDS} rounds, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.table(sets.map(({ kinds: _kinds, ...row }) => row));
  const target = sets[1]!;
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
  console.log(
    `100k verdict: p99 ≤ ${TARGETS.p99Ms} ms per word ${met(target.p99Ms <= TARGETS.p99Ms)}; build ≤ ${TARGETS.buildMs} ms ${met(target.coldBuildMs <= TARGETS.buildMs)}; ` +
      `memory ≤ ${TARGETS.memoryMb} MB ${met(target.memoryMb <= TARGETS.memoryMb)}`,
  );
  for (const set of sets) {
    console.log(`\n${set.label}: latency by query word`);
    console.table(set.kinds);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!existsSync(BRANDS_DIR)) throw new Error(`brand list fixtures not found: ${BRANDS_DIR}`);
  if (typeof globalThis.gc !== 'function')
    throw new Error('run with node --expose-gc: memory is measured after collection');
  const gc = globalThis.gc;
  await main(() => void gc());
}
