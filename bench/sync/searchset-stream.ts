// Micro-benchmark of the sync's searchset reader (api/src/features/connections/sync/searchset-stream.ts), in process: MB/s of
// readSearchset over generated pages given in 64 KiB chunks (as a network body arrives), next to JSON.parse of the
// same pages whole (what the sync did before, and a ceiling: each entry is JSON.parse'd by the reader too).
// Three workloads of 100 entries a page: Observations padded with a long string each (an attachment's base64
// data, 8–64 KiB: the target, ≥ 300 MB/s), plain Observations of about 1 KiB (many short strings), and the padded
// pages with maxEntryBytes below every entry (each one scanned past and dropped: the scan alone).
// `node dist/bench/sync/searchset-stream.js` (BENCH_SEARCHSET_MB=<n> per workload and round, BENCH_ROUNDS=<n>).
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSearchset, type SearchsetLimits } from '../../api/src/features/connections/sync/searchset-stream.js';
import { seededRandom } from '../../testkit/synthetic-brands.js';

const TARGET_MB_PER_SECOND = 300;
const MEGABYTES = Number(process.env.BENCH_SEARCHSET_MB ?? 512);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CHUNK = 64 * 1024;
const MiB = 1024 * 1024;
const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function observation(random: () => number, i: number, padding: number) {
  const data = Array.from({ length: padding }, () => BASE64[Math.floor(random() * 64)]).join('');
  return {
    fullUrl: `https://fhir.example.org/r4/Observation/obs-${i}`,
    resource: {
      resourceType: 'Observation',
      id: `obs-${i}`,
      meta: { versionId: '3', lastUpdated: '2024-05-01T10:00:00.000Z' },
      status: 'final',
      category: [
        {
          coding: [
            {
              system: 'http://terminology.hl7.org/CodeSystem/observation-category',
              code: 'vital-signs',
              display: 'Vital Signs',
            },
          ],
        },
      ],
      code: { coding: [{ system: 'http://loinc.org', code: '29463-7', display: 'Body weight' }], text: 'Weight' },
      subject: { reference: 'Patient/p-1', display: 'Jane "JJ" Doe\\Smith' },
      effectiveDateTime: '2024-05-01T09:58:00Z',
      valueQuantity: { value: 72.5 + i, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' },
      note: [{ text: 'Mesuré à jeun — 空腹時 😀' }],
      ...(padding > 0 && { extension: [{ url: 'urn:bench:scan', valueAttachment: { data } }] }),
    },
    search: { mode: 'match' },
  };
}

function page(seed: number, padded: boolean): Buffer {
  const random = seededRandom(seed);
  const entry = Array.from({ length: 100 }, (_, i) =>
    observation(random, i, padded ? 8 * 1024 + Math.floor(random() * 56 * 1024) : 0),
  );
  const link = [{ relation: 'next', url: 'https://fhir.example.org/r4/Observation?patient=p-1&_count=100&page=2' }];
  return Buffer.from(JSON.stringify({ resourceType: 'Bundle', type: 'searchset', total: 1000, link, entry }));
}

/** Enough copies of `bytes` to make MEGABYTES. */
const copies = (bytes: Buffer) => Math.max(1, Math.round((MEGABYTES * 1e6) / bytes.length));

async function* chunked(bytes: Buffer): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += CHUNK) yield bytes.subarray(at, at + CHUNK);
}

async function streamed(bytes: Buffer, limits: SearchsetLimits) {
  const start = performance.now();
  let entries = 0;
  let peak = 0;
  for (let i = copies(bytes); i > 0; i--) {
    const searchset = readSearchset(chunked(bytes), limits);
    for await (const entry of searchset.entries) if (entry.kind === 'entry' || entry.bytes > 0) entries++;
    if (searchset.rest().resourceType !== 'Bundle') throw new Error('the skeleton was not read');
    peak = Math.max(peak, searchset.heldPeak());
  }
  return { seconds: (performance.now() - start) / 1000, entries, peak };
}

function parsedWhole(bytes: Buffer) {
  const start = performance.now();
  let entries = 0;
  for (let i = copies(bytes); i > 0; i--)
    entries += (JSON.parse(bytes.toString('utf8')) as { entry: unknown[] }).entry.length;
  return { seconds: (performance.now() - start) / 1000, entries };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round = (value: number, digits = 0) => Number(value.toFixed(digits));

async function main(): Promise<void> {
  const padded = page(1, true);
  const plain = page(2, false);
  const workloads = [
    { name: 'padded entries (target)', bytes: padded, limits: { maxEntryBytes: 4 * MiB, maxOtherBytes: MiB } },
    { name: 'plain Observations', bytes: plain, limits: { maxEntryBytes: 4 * MiB, maxOtherBytes: MiB } },
    { name: 'padded, all skipped (scan)', bytes: padded, limits: { maxEntryBytes: 4096, maxOtherBytes: MiB } },
  ];
  const rates = workloads.map(() => ({ streamed: [] as number[], parsed: [] as number[], peak: 0 }));
  await streamed(padded, workloads[0]!.limits); // warm-up: JIT
  // Rounds interleave the workloads, so drift on a shared machine hits each alike.
  for (let r = 0; r < ROUNDS; r++)
    for (const [i, { bytes, limits }] of workloads.entries()) {
      const total = bytes.length * copies(bytes);
      const stream = await streamed(bytes, limits);
      rates[i]!.streamed.push(total / 1e6 / stream.seconds);
      rates[i]!.peak = Math.max(rates[i]!.peak, stream.peak);
      rates[i]!.parsed.push(total / 1e6 / parsedWhole(bytes).seconds);
    }
  console.log(
    `searchset reader, node ${process.version}, ${cpus().length} cores, ${MEGABYTES} MB × ${ROUNDS} rounds a workload, ` +
      `${CHUNK / 1024} KiB chunks, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  const rows = workloads.map(({ name, bytes }, i) => ({
    workload: name,
    pageMB: round(bytes.length / 1e6, 2),
    streamMBps: round(median(rates[i]!.streamed)),
    jsonParseMBps: round(median(rates[i]!.parsed)),
    ratio: round(median(rates[i]!.streamed) / median(rates[i]!.parsed), 2),
    heldPeakKiB: round(rates[i]!.peak / 1024),
  }));
  console.table(rows);
  const target = rows[0]!.streamMBps;
  console.log(
    `verdict: ≥ ${TARGET_MB_PER_SECOND} MB/s over padded entries ${target >= TARGET_MB_PER_SECOND ? 'met' : 'MISSED'}`,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
