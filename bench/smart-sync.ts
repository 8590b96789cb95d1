// Benchmark of connections to health systems (docs/connecting.md), `node dist/bench/smart-sync.js`, part of `npm run
// bench`. A Portico API as a real process (testkit/replicas.ts: the Helm chart's settings, which are the defaults, but
// for plain-http EHRs on loopback allowed; the embedded database, no Redis) and the sandbox EHR in this process on
// loopback (so its CPU is not the API's). Each of BENCH_SYNC_ROUNDS rounds (2):
//  1. first syncs, 100 observations a page, each timed from the sign-in's callback to the sync's end, of
//     - BENCH_SYNC_OBSERVATIONS (10,000) plain Observations (about 0.7 kB of JSON each), and a tenth as many
//       (memory must not grow with the pages);
//     - BENCH_SYNC_BIG_OBSERVATIONS (10,000; 0 skips it) padded to BENCH_SYNC_BIG_BYTES (204,800) of JSON each by the
//       sandbox's padObservations switch, ≈ 2 GB streamed: the security review's case, a sync held to its 8 MiB of
//       resources however large they are;
//     for each: wall time, observations/s, MB/s of resource JSON (10^6 bytes), the API's CPU per observation (from
//     /proc) and its peak RSS (VmHWM, reset before each sync where Linux allows) before → after, against the memory
//     limit charts/portico/values.yaml sets for the API pods;
//  2. refresh single-flight (bench/sync/refresh-single-flight.ts).
// The load average at the start and the end. Goals: ≥ 2,000 observations/s and ≤ 10 s for 10,000 plain ones.
// The embedded database keeps what is synced until the end: the big row needs somewhat more than its size free on
// os.tmpdir() each round (its documents; the bundle records are gzipped).
import { cpus, loadavg } from 'node:os';
import { buildObservation, SEED_STEP_MS, SEEDED_AT } from '../sandbox/src/data.js';
import type { SandboxPatient } from '../sandbox/src/server.js';
import { refreshSingleFlight } from './sync/refresh-single-flight.js';
import { chartMemoryLimitMiB, cpuMs, memoryMiB, resetPeak } from './process-stats.js';
import { apiNodeOptions, startSyncBenchWorld } from './sync/world.js';

const OBSERVATIONS = Number(process.env.BENCH_SYNC_OBSERVATIONS ?? 10_000);
const BIG_OBSERVATIONS = Number(process.env.BENCH_SYNC_BIG_OBSERVATIONS ?? 10_000);
const BIG_BYTES = Number(process.env.BENCH_SYNC_BIG_BYTES ?? 200 * 1024);
const ROUNDS = Number(process.env.BENCH_SYNC_ROUNDS ?? 2);
const CALLERS = Number(process.env.BENCH_REFRESH_CALLERS ?? 50);
const BRAND = 'bench';

const loadAverage = () =>
  `load average: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')}`;
const grouped = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

const patient = (id: string, observations: number): SandboxPatient => ({
  id,
  username: id,
  password: 'sandbox',
  name: `${id[0]!.toUpperCase()}${id.slice(1)} Patient`,
  birthDate: '1970-01-01',
  observations,
});

/**
 * The bytes of JSON of the observations the sandbox serves `patient` (seeded as its observation-store.ts seeds them),
 * each padded to `padTo` as its padObservations switch pads (to exactly that, when shorter).
 */
function servedBytes({ id, observations }: SandboxPatient, padTo: number): number {
  let total = 0;
  for (let index = 0; index < observations; index++) {
    const at = SEEDED_AT + index * SEED_STEP_MS;
    const entry = { index, created: at, lastUpdated: at, version: 1 };
    const resource = buildObservation(entry, { brandKey: BRAND, patientId: id, invalid: false });
    total += Math.max(Buffer.byteLength(JSON.stringify(resource)), padTo);
  }
  return total;
}

interface SyncCase {
  patient: SandboxPatient;
  /** What the sandbox pads each observation's JSON to while this patient syncs (0: nothing). */
  padTo: number;
  /** Of resource JSON, all observations. */
  bytes: number;
}

async function main(): Promise<void> {
  console.log(`start: ${loadAverage()}`);
  const plain = (id: string, n: number): SyncCase => ({ patient: patient(id, n), padTo: 0, bytes: 0 });
  const cases = [plain('small', Math.round(OBSERVATIONS / 10)), plain('bulk', OBSERVATIONS)];
  if (BIG_OBSERVATIONS > 0) cases.push({ patient: patient('large', BIG_OBSERVATIONS), padTo: BIG_BYTES, bytes: 0 });
  for (const sync of cases) sync.bytes = servedBytes(sync.patient, sync.padTo);
  const limitMiB = chartMemoryLimitMiB();

  const world = await startSyncBenchWorld({
    patients: cases.map((sync) => sync.patient),
    grants: {
      resourceTypes: ['Observation'],
      loincCodes: ['*'],
      confidentiality: ['N'],
      sensitivity: [],
      lookbackDays: null,
    },
  });
  const { api, ehr, call, sk } = world;
  try {
    /** Connects `patient` through the sign-in and waits for the first sync; its figures. */
    const firstSync = async (patient: string, appUserId: string) => {
      let peakReset = false;
      let memoryBefore = memoryMiB(api.pid);
      let cpuBefore = 0;
      let started = 0;
      await world.connect(patient, appUserId, () => {
        peakReset = resetPeak(api.pid);
        memoryBefore = memoryMiB(api.pid);
        cpuBefore = cpuMs(api.pid);
        started = performance.now();
      });
      for (;;) {
        const user = await call('GET', `/api/platform/v1/app-users/${appUserId}`, sk);
        const connection = user.connections?.[0];
        const sync = connection?.sync;
        if (sync?.status === 'FAILED') throw new Error(`the sync failed: ${sync.lastError}`);
        if (sync?.lastSyncedAt) {
          const seconds = (performance.now() - started) / 1000;
          return {
            connection: { id: connection.id as string, patient: connection.patient as string },
            count: sync.observations as number,
            skipped: sync.skipped as number,
            seconds,
            cpu: cpuMs(api.pid) - cpuBefore,
            memoryBefore,
            memoryAfter: memoryMiB(api.pid),
            peakReset,
          };
        }
        // Polled within 1 % of the time so far (20 – 250 ms): the polls cost the API little CPU on long syncs.
        const wait = Math.min(250, Math.max(20, (performance.now() - started) / 100));
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    };

    console.log(
      `\nConnections to health systems: the API as a process (embedded database), the sandbox EHR in the benchmark's process`,
    );
    console.log(
      `(node ${process.version}, ${cpus().length} cores; 100 observations a page; ${ROUNDS} rounds; the API pods' memory ` +
        `limit in charts/portico/values.yaml: ${grouped(limitMiB)} MiB; the API's Node options: ` +
        `${apiNodeOptions() || 'none'}; goals for 10,000 plain observations: ` +
        `≥ 2,000 observations/s and ≤ 10 s)`,
    );
    console.log(
      `| round | first sync of | wall | observations/s | MB/s of resource JSON | API CPU an observation | API peak RSS (VmHWM) before → after | of the limit | load |`,
    );
    console.log(`|---|---|---|---|---|---|---|---|---|`);
    let refreshed: { id: string; patient: string } | undefined;
    for (let round = 1; round <= ROUNDS; round++) {
      for (const { patient, padTo, bytes } of cases) {
        ehr.switches.padObservations = padTo > 0 ? { bytes: padTo } : null;
        const sync = await firstSync(patient.id, `${patient.id}-${round}`);
        ehr.switches.padObservations = null;
        if (sync.count !== patient.observations)
          throw new Error(`${patient.id}: ${sync.count} of ${patient.observations} stored, ${sync.skipped} skipped`);
        if (patient.id === 'bulk') refreshed = sync.connection;
        const mb = bytes / 1e6;
        const peak = sync.memoryAfter.peak;
        console.log(
          `| ${round} | ${grouped(sync.count)} × ${grouped(bytes / sync.count / 1000, 2)} kB (${grouped(mb, mb < 100 ? 1 : 0)} MB) ` +
            `| ${sync.seconds.toFixed(2)} s | ${grouped(sync.count / sync.seconds)} | ${grouped(mb / sync.seconds, 1)} ` +
            `| ${grouped((sync.cpu * 1000) / sync.count)} µs ` +
            `| ${sync.memoryBefore.peak.toFixed(0)} → ${peak.toFixed(0)} MiB${sync.peakReset ? '' : ' (not reset: since start)'} ` +
            `| ${((peak / limitMiB) * 100).toFixed(0)} % | ${loadavg()[0]!.toFixed(1)} |`,
        );
      }
    }
    await refreshSingleFlight({
      mongo: world.mongo,
      ehr,
      tokenKeys: world.tokenKeys,
      connection: refreshed!,
      callers: CALLERS,
      rounds: ROUNDS,
    });
    console.log(`end: ${loadAverage()}`);
  } finally {
    await world.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
