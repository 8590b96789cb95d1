// Benchmark of the gateway's per-connection index (api/src/features/clinical/gateway/connection-index.ts), in
// process: what one indexed observation costs in memory (measured, next to the byte count the index charges the
// budget with), and the CPU time of loading an index of N observations from a checkpoint's parts, from bundle
// records, and of advancing one by a bundle of 50. `node --expose-gc dist/bench/gateway-index.js`.
import { cpus, loadavg } from 'node:os';
import { spreadObservations } from './clinical-seed.js';
import { observationBundle } from '../testkit/observations.js';
import { validateBundle, type NormalizedObservation } from '../api/src/features/clinical/ingest/observations.js';
import {
  packObservations,
  recordObservations,
  storedFields,
} from '../api/src/features/clinical/records/bundle-records.js';
import { foldBundles, observationRow, type CommittedBundle } from '../api/src/features/clinical/records/rows.js';
import { decodeRows, encodeRows } from '../api/src/features/clinical/records/checkpoints.js';
import { ConnectionIndex } from '../api/src/features/clinical/gateway/connection-index.js';

const SIZE = Number(process.env.BENCH_OBSERVATIONS ?? 10_000);
const ROUNDS = 5;
const CONNECTION = '0b9e3c1e-6f4a-4d7e-9a51-2f8c0d6b7a11';

function normalized(count: number): NormalizedObservation[] {
  const resources = spreadObservations(count);
  const out: NormalizedObservation[] = [];
  for (let i = 0; i < resources.length; i += 1000) {
    const result = validateBundle(observationBundle(resources.slice(i, i + 1000)));
    if (!result.ok) throw new Error('the benchmark bundle is not valid');
    out.push(...result.observations);
  }
  return out;
}

function memory(): number {
  const gc = globalThis.gc;
  if (typeof gc !== 'function') throw new Error('run with --expose-gc');
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

/** CPU milliseconds of `work`, the median of ROUNDS runs. */
function cpuMs<T>(work: () => T): { ms: number; value: T } {
  const runs: number[] = [];
  let value!: T;
  for (let round = 0; round < ROUNDS; round++) {
    const before = process.cpuUsage();
    value = work();
    const used = process.cpuUsage(before);
    runs.push((used.user + used.system) / 1000);
  }
  runs.sort((a, b) => a - b);
  return { ms: runs[runs.length >> 1]!, value };
}

function main(): void {
  const at = new Date();
  const stored = normalized(SIZE).map((o) => storedFields({ accountId: 'bench', connectionId: CONNECTION }, o, at));
  const row = (fields: (typeof stored)[number]) =>
    observationRow({ ...fields, _id: `${CONNECTION}/${fields.resourceId}` }, at.getTime());
  const records = Array.from({ length: Math.ceil(SIZE / 1000) }, (_, i) => ({
    gen: i + 1,
    at,
    observations: packObservations(stored.slice(i * 1000, (i + 1) * 1000)),
  }));
  const { parts, bytes } = encodeRows(stored.map(row));

  // Memory: an index loaded from the checkpoint, measured around it, before anything else is kept.
  // (In a function of its own, so that nothing of the load outlives it on this frame's stack.)
  const load = () => ConnectionIndex.fromRows(parts.flatMap(decodeRows), 1e12, 't', 1)!;
  const before = memory();
  const held = load();
  const after = memory();
  const fromCheckpoint = cpuMs(() => ConnectionIndex.fromRows(parts.flatMap(decodeRows), 1e12, 't', 1)!);
  const fromRecords = cpuMs(() => {
    const bundles: CommittedBundle[] = records.map((record) => ({
      gen: record.gen,
      at: record.at.getTime(),
      rows: recordObservations({ ...record, _id: '', connectionId: CONNECTION }).map(row),
    }));
    return ConnectionIndex.fromRows(foldBundles([], bundles).values(), 1e12, 't', records.length)!;
  });
  const index = fromCheckpoint.value;
  const fifty = normalized(50).map((o) => row(storedFields({ accountId: 'bench', connectionId: CONNECTION }, o, at)));
  const advance = cpuMs(() =>
    index.advance({ gen: 2, bundles: [{ gen: 2, at: at.getTime(), rows: fifty }] }, 't2', 1e12),
  );

  const perObservation = (after - before) / SIZE;
  console.log(
    `Gateway index of ${SIZE} observations (node ${process.version}, ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}); CPU ms, median of ${ROUNDS}:`,
  );
  console.table([
    { what: 'load from a checkpoint (gunzip, parse, index)', 'CPU ms': fromCheckpoint.ms.toFixed(0) },
    {
      what: `load from ${records.length} bundle records (gunzip, parse, fold, index)`,
      'CPU ms': fromRecords.ms.toFixed(0),
    },
    { what: 'advance by a bundle of 50', 'CPU ms': advance.ms.toFixed(0) },
  ]);
  console.log(
    `memory per indexed observation: ${Math.round(perObservation)} bytes measured (heap + buffers), ${Math.round(held.bytes / SIZE)} bytes charged to the budget; checkpoint ${(bytes / 1e6).toFixed(1)} MB of text, ${(parts.reduce((s, p) => s + p.length, 0) / 1e6).toFixed(2)} MB stored`,
  );
}

main();
