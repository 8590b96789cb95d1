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
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '#core/clock.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { connectMongo } from '#core/infra/mongo.js';
import { openObjectStorage } from '#core/object-storage/index.js';
import { SnapshotStore } from '#core/catalog/snapshots.js';
import { publishCatalog } from '../operator/src/pipeline/publish.js';
import { buildObservation, SEED_STEP_MS, SEEDED_AT } from '../sandbox/src/data.js';
import { startSandboxEhr, type SandboxClient, type SandboxPatient } from '../sandbox/src/server.js';
import { ADMIN_TOKEN } from '../testkit/api.js';
import { startPausableDatabase } from '../testkit/pausable.js';
import { startReplica, whenReady, type Replica } from '../testkit/replicas.js';
import { sandboxSources } from '../testkit/sandbox-catalog.js';
import { signIn } from '../testkit/sandbox-ehr.js';
import { refreshSingleFlight } from './sync/refresh-single-flight.js';
import { chartHeapMiB, chartMemoryLimitMiB, cpuMs, memoryMiB, resetPeak } from './process-stats.js';

const OBSERVATIONS = Number(process.env.BENCH_SYNC_OBSERVATIONS ?? 10_000);
const BIG_OBSERVATIONS = Number(process.env.BENCH_SYNC_BIG_OBSERVATIONS ?? 10_000);
const BIG_BYTES = Number(process.env.BENCH_SYNC_BIG_BYTES ?? 200 * 1024);
const ROUNDS = Number(process.env.BENCH_SYNC_ROUNDS ?? 2);
const CALLERS = Number(process.env.BENCH_REFRESH_CALLERS ?? 50);
const TOKEN_KEYS = `bench:${Buffer.alloc(32, 7).toString('base64')}`;
const RETURN = 'https://app.example.com/connected';
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

  const database = await startPausableDatabase();
  const name = `bench_smart_${randomUUID().slice(0, 8)}`;
  const clients: SandboxClient[] = [{ clientId: 'portico-bench', redirectUris: [], auth: { method: 'none' } }];
  const ehr = await startSandboxEhr({
    brands: [{ key: BRAND, name: 'Bench Health' }],
    clients,
    patients: cases.map((sync) => sync.patient),
  });
  const registrations = path.join(tmpdir(), `${name}-clients.json`);
  writeFileSync(registrations, JSON.stringify([{ match: { fhirHost: '127.0.0.1' }, clientId: 'portico-bench' }]));
  const objects = `file://${path.join(tmpdir(), `portico-fault-objects-${name}`)}`;
  const env = {
    PORTICO_SMART_CLIENTS: registrations,
    PORTICO_SMART_ALLOW_INSECURE: 'true',
    PORTICO_TOKEN_KEYS: TOKEN_KEYS,
    PORTICO_CATALOG_POLL_MS: '200',
    // The chart's heap size, as its pods run (BENCH_API_NODE_OPTIONS overrides: `''` for Node's own default).
    NODE_OPTIONS: process.env.BENCH_API_NODE_OPTIONS ?? `--max-old-space-size=${chartHeapMiB()}`,
  };
  let api: Replica | undefined;
  const mongo = await connectMongo(`${database.url}${name}`, name);
  try {
    // The catalog: the sandbox's brand, published as the operator publishes.
    const locks = await documentLocksFor(mongo.db);
    await publishCatalog({
      ref: { namespace: 'default', name: 'default' },
      spec: { rollout: { retainSnapshots: 3, minBrandRatioPercent: 0 } },
      sources: sandboxSources(ehr.origin, [{ key: BRAND, name: 'Bench Health', platformType: 'OTHER' }]),
      store: new SnapshotStore(mongo.db, locks, systemClock),
      storage: openObjectStorage(objects),
    });
    api = await startReplica({ name: 'api', mongodbServer: database.url, database: name, redisUrl: '', env });
    await whenReady(api);
    clients[0]!.redirectUris.push(`${api.url}/api/sdk/v1/connect/callback`);
    const call = async (method: string, url: string, key: string, body?: unknown) => {
      const res = await fetch(api!.url + url, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      return (await res.json()) as Record<string, any>;
    };
    const account = (await call('POST', '/api/admin/v1/customer-accounts', ADMIN_TOKEN, { name: 'Sync bench' })).id;
    const sk = (
      await call('POST', `/api/admin/v1/customer-accounts/${account}/api-keys`, ADMIN_TOKEN, {
        scopes: ['app_user:read', 'app_user:write'],
      })
    ).key;
    const app = await call('POST', `/api/admin/v1/customer-accounts/${account}/apps`, ADMIN_TOKEN, {
      name: 'Bench app',
      grants: {
        resourceTypes: ['Observation'],
        loincCodes: ['*'],
        confidentiality: ['N'],
        sensitivity: [],
        lookbackDays: null,
      },
      redirectUris: [RETURN],
    });
    let brandId: string | undefined;
    for (let i = 0; i < 100 && !brandId; i++) {
      brandId = (await call('GET', '/api/sdk/v1/catalog/brands?q=bench%20health', ''))['brands']?.[0]?.id;
      if (!brandId) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    if (!brandId) throw new Error('the API never served the bench catalog');

    /** Connects `patient` through the sign-in and waits for the first sync; its figures. */
    const firstSync = async (patient: string, appUserId: string) => {
      // The app's backend mints the link token; its page initiates with it.
      const { linkToken } = await call('POST', '/api/platform/v1/link-tokens', sk, {
        appUserId,
        appId: app.id,
        redirectUri: RETURN,
        brandId,
      });
      const session = await call('POST', '/api/sdk/v1/connect-sessions', app.publishableKey, {
        appUserId,
        brandId,
        redirectUri: RETURN,
        linkToken,
      });
      const launched = await fetch(session.authorizeUrl, { redirect: 'manual' });
      // The browser's binding cookie goes back with the callback.
      const cookie = launched.headers
        .getSetCookie()
        .map((line) => line.split(';')[0]!)
        .join('; ');
      const callback = await signIn(launched.headers.get('location')!, { username: patient });
      const peakReset = resetPeak(api!.pid);
      const memoryBefore = memoryMiB(api!.pid);
      const cpuBefore = cpuMs(api!.pid);
      const started = performance.now();
      const back = await fetch(callback, { redirect: 'manual', headers: { cookie } });
      if (back.status !== 303 || !back.headers.get('location')!.includes('status=connected'))
        throw new Error(`connect failed: ${back.headers.get('location')}`);
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
            cpu: cpuMs(api!.pid) - cpuBefore,
            memoryBefore,
            memoryAfter: memoryMiB(api!.pid),
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
        `${env.NODE_OPTIONS || 'none'}; goals for 10,000 plain observations: ` +
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
      mongo,
      ehr,
      tokenKeys: TOKEN_KEYS,
      connection: refreshed!,
      callers: CALLERS,
      rounds: ROUNDS,
    });
    console.log(`end: ${loadAverage()}`);
  } finally {
    await api?.stop();
    await mongo.db.dropDatabase().catch(() => {});
    await mongo.close();
    await ehr.close();
    await database.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
