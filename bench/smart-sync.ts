// Benchmark of connections to health systems (docs/connecting.md), `node dist/bench/smart-sync.js`, part of `npm run
// bench`. A Portico API as a real process (production settings, the embedded database) and the sandbox EHR in this
// process on loopback (so its CPU is not the API's):
//  1. a first sync of one patient's BENCH_SYNC_OBSERVATIONS (10,000) Observations, 100 a page, from the sign-in's
//     callback to the sync's end: observations a second, the API's CPU per observation (from /proc), and its
//     resident memory before and its peak (VmHWM) after, next to a sync of a tenth as many (memory must not grow
//     with the pages);
//  2. refresh single-flight: BENCH_REFRESH_CALLERS (50) callers on two vaults (two replicas) ask for an expiring
//     token at once; how many refreshes reach the EHR (1) and how long the callers waited.
// BENCH_SYNC_ROUNDS rounds (2) of each. Goals: ≥ 2,000 observations/s and ≤ 10 s for 10,000.
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { systemClock } from '../core/src/clock.js';
import { documentLocksFor } from '../core/src/infra/locks.js';
import { connectMongo } from '../core/src/infra/mongo.js';
import { openObjectStorage } from '../core/src/object-storage/index.js';
import { SnapshotStore } from '../core/src/catalog/snapshots.js';
import { loadConfig } from '../api/src/config.js';
import { buildHealthLinks } from '../api/src/health-links.js';
import { publishCatalog } from '../operator/src/pipeline/publish.js';
import { startSandboxEhr, type SandboxClient, type SandboxPatient } from '../sandbox/src/server.js';
import { ADMIN_TOKEN } from '../testkit/api.js';
import { startPausableDatabase } from '../testkit/pausable.js';
import { startReplica, whenReady, type Replica } from '../testkit/replicas.js';
import { sandboxSources } from '../testkit/sandbox-catalog.js';
import { signIn } from '../testkit/sandbox-ehr.js';

const OBSERVATIONS = Number(process.env.BENCH_SYNC_OBSERVATIONS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_SYNC_ROUNDS ?? 2);
const CALLERS = Number(process.env.BENCH_REFRESH_CALLERS ?? 50);
const TOKEN_KEYS = `bench:${Buffer.alloc(32, 7).toString('base64')}`;
const RETURN = 'https://app.example.com/connected';

/** CPU time (user + system) of a process so far, in milliseconds (Linux). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // USER_HZ = 100
}

/** VmRSS and VmHWM (the peak) of a process, in MiB. */
function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)![1]);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

const patients = (n: number): SandboxPatient[] => [
  { id: 'bulk', username: 'bulk', password: 'sandbox', name: 'Bulk Patient', birthDate: '1970-01-01', observations: n },
  {
    id: 'small',
    username: 'small',
    password: 'sandbox',
    name: 'Small Patient',
    birthDate: '1970-01-01',
    observations: n / 10,
  },
];

async function main(): Promise<void> {
  const database = await startPausableDatabase();
  const name = `bench_smart_${randomUUID().slice(0, 8)}`;
  const clients: SandboxClient[] = [{ clientId: 'portico-bench', redirectUris: [], auth: { method: 'none' } }];
  const ehr = await startSandboxEhr({
    brands: [{ key: 'bench', name: 'Bench Health' }],
    clients,
    patients: patients(OBSERVATIONS),
  });
  const registrations = path.join(tmpdir(), `${name}-clients.json`);
  writeFileSync(registrations, JSON.stringify([{ match: { fhirHost: '127.0.0.1' }, clientId: 'portico-bench' }]));
  const objects = `file://${path.join(tmpdir(), `portico-fault-objects-${name}`)}`;
  const env = {
    PORTICO_SMART_CLIENTS: registrations,
    PORTICO_SMART_ALLOW_INSECURE: 'true',
    PORTICO_TOKEN_KEYS: TOKEN_KEYS,
    PORTICO_CATALOG_POLL_MS: '200',
  };
  let api: Replica | undefined;
  const mongo = await connectMongo(`${database.url}${name}`, name);
  try {
    // The catalog: the sandbox's brand, published as the operator publishes.
    const locks = await documentLocksFor(mongo.db);
    await publishCatalog({
      ref: { namespace: 'default', name: 'default' },
      spec: { rollout: { retainSnapshots: 3, minBrandRatioPercent: 0 } },
      sources: sandboxSources(ehr.origin, [{ key: 'bench', name: 'Bench Health', platformType: 'OTHER' }]),
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
      const session = await call('POST', '/api/sdk/v1/connect-sessions', app.publishableKey, {
        appUserId,
        brandId,
        redirectUri: RETURN,
      });
      const launched = await fetch(session.authorizeUrl, { redirect: 'manual' });
      const callback = await signIn(launched.headers.get('location')!, { username: patient });
      const memoryBefore = memoryMiB(api!.pid);
      const cpuBefore = cpuMs(api!.pid);
      const started = performance.now();
      const back = await fetch(callback, { redirect: 'manual' });
      if (back.status !== 303 || !back.headers.get('location')!.includes('status=connected'))
        throw new Error(`connect failed: ${back.headers.get('location')}`);
      for (;;) {
        const user = await call('GET', `/api/platform/v1/app-users/${appUserId}`, sk);
        const sync = user.connections?.[0]?.sync;
        if (sync?.status === 'FAILED') throw new Error(`the sync failed: ${sync.lastError}`);
        if (sync?.lastSyncedAt) {
          const seconds = (performance.now() - started) / 1000;
          return {
            count: sync.observations as number,
            seconds,
            cpu: cpuMs(api!.pid) - cpuBefore,
            memoryBefore,
            memoryAfter: memoryMiB(api!.pid),
          };
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };

    console.log(
      `\nConnections to health systems: the API as a process (embedded database), the sandbox EHR in the benchmark's process`,
    );
    console.log(
      `(${OBSERVATIONS} observations a patient, 100 a page; ${ROUNDS} rounds; CPU: ${(await import('node:os')).cpus().length} cores)`,
    );
    for (let round = 1; round <= ROUNDS; round++) {
      const small = await firstSync('small', `small-${round}`);
      const bulk = await firstSync('bulk', `bulk-${round}`);
      const rate = bulk.count / bulk.seconds;
      console.log(
        `  round ${round}: first sync of ${bulk.count} in ${bulk.seconds.toFixed(2)} s = ${Math.round(rate)} observations/s ` +
          `(goal ≥ 2,000/s, ≤ 10 s); API CPU ${((bulk.cpu * 1000) / bulk.count).toFixed(0)} µs an observation; ` +
          `API RSS ${bulk.memoryBefore.rss.toFixed(0)} MiB before, peak ${bulk.memoryAfter.peak.toFixed(0)} MiB after ` +
          `(a sync of ${small.count}: peak ${small.memoryAfter.peak.toFixed(0)} MiB); load ${loadavg()[0]!.toFixed(1)}`,
      );
    }
    await singleFlight(mongo, ehr);
  } finally {
    await api?.stop();
    await mongo.db.dropDatabase().catch(() => {});
    await mongo.close();
    await ehr.close();
    await database.stop();
  }
}

/** Two vaults on the same database (two replicas), CALLERS asking at once for a token that is about to expire. */
async function singleFlight(
  mongo: Awaited<ReturnType<typeof connectMongo>>,
  ehr: Awaited<ReturnType<typeof startSandboxEhr>>,
): Promise<void> {
  const tokens = mongo.db.collection<{ _id: string; expiresAt: Date }>('connection_tokens');
  const target = await tokens.findOne({});
  if (!target) throw new Error('no connection to refresh');
  const vaults = await Promise.all([0, 1].map(() => vaultOn(mongo)));
  for (let round = 1; round <= ROUNDS; round++) {
    await tokens.updateOne({ _id: target._id }, { $set: { expiresAt: new Date(Date.now() + 1_000) } });
    const before = ehr.stats.tokenRequests.refresh_token;
    const started = performance.now();
    const waits = await Promise.all(
      Array.from({ length: CALLERS }, async (_, i) => {
        await vaults[i % 2]!.accessToken(target._id);
        return performance.now() - started;
      }),
    );
    waits.sort((a, b) => a - b);
    console.log(
      `  refresh single-flight, round ${round}: ${CALLERS} callers on two replicas → ${ehr.stats.tokenRequests.refresh_token - before} refresh at the EHR; ` +
        `callers waited ${waits[0]!.toFixed(0)}–${waits[waits.length - 1]!.toFixed(0)} ms (median ${waits[waits.length >> 1]!.toFixed(0)} ms)`,
    );
  }
}

async function vaultOn(mongo: Awaited<ReturnType<typeof connectMongo>>) {
  const registrations = path.join(tmpdir(), `bench-vault-${randomUUID()}.json`);
  writeFileSync(registrations, JSON.stringify([{ match: { fhirHost: '127.0.0.1' }, clientId: 'portico-bench' }]));
  const config = loadConfig({
    MONGODB_URI: 'mongodb://127.0.0.1/unused',
    PORTICO_TOKEN_KEYS: TOKEN_KEYS,
    PORTICO_SMART_CLIENTS: registrations,
    PORTICO_SMART_ALLOW_INSECURE: 'true',
    LOG_LEVEL: 'silent',
  });
  const unused = new Proxy({}, { get: () => () => Promise.reject(new Error('not used by the vault')) });
  const links = await buildHealthLinks({
    config,
    db: mongo.db,
    longDb: mongo.db,
    locks: await documentLocksFor(mongo.db),
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    users: () => unused as never,
    apps: unused as never,
    sessions: unused as never,
    ingest: unused as never,
    outbox: unused as never,
    brand: () => undefined,
  });
  return links.vault;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
