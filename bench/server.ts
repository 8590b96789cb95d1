// Child process of the HTTP benchmark: a raw node:http hello-world, the real Portico API (embedded database,
// in-process state), and the same API's Koa stack alone (no catalog fast path), side by side in one process so
// all three get the same CPU. Seeds one tenant with a patient read over and over (served from the caches),
// COLD patients read once each (the database path), 60 webhook endpoints, and the catalog built from every
// brand list fixture (test/fixtures/brands) through the operator's pipeline; prints what the driver needs as one
// JSON line and answers `cpu` messages with process.cpuUsage() so the driver can charge CPU time to each target.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../api/src/app.js';
import { benchConfig } from './config.js';
import { PATIENTS, type Patient } from '../api/src/features/patients/store.js';
import { buildServices } from '../api/src/wiring.js';
import { systemClock } from '#core/clock.js';
import { startEmbeddedDatabase } from '#core/infra/devdb.js';
import { connectMongo, findById } from '#core/infra/mongo.js';
import { publishCatalog } from '../operator/src/pipeline/publish.js';
import { benchCatalogSources } from './catalog/sources.js';
import { catalogBenchQueries, type CatalogBenchQueries } from './catalog/http-queries.js';
import { seedClinical, type ClinicalSeed } from './clinical-seed.js';
import { koaListener } from '../testkit/koa.js';

const ENDPOINTS = 60;
const COLD_PATIENTS = Number(process.env.BENCH_COLD_PATIENTS ?? 12_000);

export interface Seed {
  raw: string;
  api: string;
  koa: string;
  /** The same API built without the access log (buildServices' withoutAccessLog), on the same database: what the
   * log costs the gateway is the difference between its rows. */
  apiUnlogged: string;
  key: string;
  patientId: string;
  coldPatientIds: string[];
  endpoints: number;
  brands: number;
  logoBrandId: string;
  lookupBrandId: string;
  /** Search queries made from the loaded catalog (bench/catalog/http-queries.ts). */
  catalogQueries: CatalogBenchQueries;
  clinical: ClinicalSeed;
  /** The embedded database's process (the driver reads its CPU time from /proc); absent when another process started it. */
  databasePid?: number;
}

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Runs `task` for every item, `width` at a time. */
async function inParallel<T>(items: T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

async function main(): Promise<void> {
  const config = benchConfig('portico-bench-objects');
  const embedded = await startEmbeddedDatabase({
    port: config.devdbPort,
    dataDir: config.dataDir,
    cacheDir: config.cacheDir,
  });
  const mongo = await connectMongo(embedded.uri, `bench_${process.pid}`, {
    timeoutMs: config.mongodbTimeoutMs,
    longTimeoutMs: config.mongodbLongTimeoutMs,
  });
  await mongo.db.dropDatabase();
  let services = await buildServices({ config, db: mongo.db, longDb: mongo.longDb, clock: systemClock });
  const api = () => createApp({ config, services, clock: systemClock, logger: pino({ level: 'warn' }) });
  let { app, handler } = api();
  let koa = koaListener(app);

  const account = await services.admin.createAccount('Benchmark Health');
  const scopes = ['patient:read', 'patient:write', 'webhook:read', 'webhook:write'] as const;
  const { key, id: keyId } = await services.admin.issueKey(account.id, { scopes: [...scopes] });
  const principal = { keyId, kind: 'sk' as const, accountId: account.id, appId: null, scopes: new Set<string>(scopes) };
  const patient = await services.patientService.create(principal, {
    givenName: 'Ada',
    familyName: 'Lovelace',
    birthDate: '1815-12-10',
    sex: 'female',
    email: 'ada@example.org',
  });
  for (let i = 0; i < ENDPOINTS; i++) {
    await services.webhookEndpointService.create(principal, {
      url: `https://hooks.example.org/portico/${i}`,
      eventTypes: ['*'],
    });
  }
  // Patients for cold reads: stored as the service stores them (profile and tenant tuple), never read yet.
  const coldPatientIds = Array.from({ length: COLD_PATIENTS }, () => randomUUID());
  const now = new Date();
  await inParallel(coldPatientIds, 32, async (id) => {
    const cold: Patient = {
      id,
      tenantId: account.id,
      givenName: 'Cold',
      familyName: 'Read',
      createdAt: now,
      updatedAt: now,
      version: 1,
      deletedAt: null,
    };
    await services.authz.grant(account.id, {
      object: `patient:${id}`,
      relation: 'tenant',
      subject: `customer_account:${account.id}`,
    });
    await services.patients.insert(cold);
  });

  const catalog = await publishCatalog({
    ref: config.catalog,
    spec: { rollout: { retainSnapshots: 2, minBrandRatioPercent: 0 } },
    sources: benchCatalogSources(),
    store: services.snapshots,
    storage: services.storage,
  });
  await services.activeCatalog.refresh();
  const served = services.activeCatalog.get()!;
  const withLogo = served.index.search('examplelabs', { limit: 1 }).brands[0]!;
  const lookup = served.index.search('mercy medical', { limit: 1 }).brands[0]!;
  const catalogQueries = catalogBenchQueries((await services.snapshots.load(served.snapshotId))!.brands, served.index);
  const clinical = await seedClinical(services, account.id, lookup.id);
  // A second replica of the API on the same database whose gateway records no reads; built after the seeding, so it
  // loads the same connection's index on its first search. A restart (below) replaces the first replica only.
  const unlogged = await buildServices({
    config,
    db: mongo.db,
    longDb: mongo.longDb,
    clock: systemClock,
    withoutAccessLog: true,
  });
  await unlogged.activeCatalog.refresh();
  const unloggedHandler = createApp({
    config,
    services: unlogged,
    clock: systemClock,
    logger: pino({ level: 'warn' }),
  }).handler;

  // `/bytes/<n>`: a static body of n bytes, the floor of any answer that size (the gateway's is ~36 KB).
  // `/work/<us>/<n>`: the same after <us> microseconds of computing: what a path that adds that much work can reach.
  // `/find/<patient id>`: the one database read of a cold patient read, through the same driver and pool, answered
  // as JSON: the floor of that row, whatever Portico does around it.
  const raw = await listen((req, res) => {
    const url = req.url ?? '';
    const find = /^\/find\/([\w-]{1,64})$/.exec(url)?.[1];
    if (find !== undefined) {
      findById(mongo.db, PATIENTS, `${account.id}/${find}`).then(
        (doc) => {
          res.writeHead(doc ? 200 : 404, { 'content-type': 'application/json' });
          res.end(JSON.stringify(doc));
        },
        () => {
          res.writeHead(503);
          res.end();
        },
      );
      return;
    }
    const work = /^\/work\/(\d{1,4})\/(\d{1,7})$/.exec(url);
    if (work) {
      // Busy for that many microseconds of the server's time, then the body.
      const until = performance.now() + Number(work[1]) / 1000;
      while (performance.now() < until);
    }
    const size = work?.[2] ?? /^\/bytes\/(\d{1,7})$/.exec(url)?.[1];
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(size === undefined ? 'hello world' : Buffer.alloc(Number(size), 'x'));
  });
  const seed: Seed = {
    raw,
    // Through a reference, so that a restart (below) swaps the API under the same address.
    api: await listen((req, res) => handler(req, res)),
    koa: await listen((req, res) => koa(req, res)),
    apiUnlogged: await listen(unloggedHandler),
    key,
    patientId: patient.id,
    coldPatientIds,
    endpoints: ENDPOINTS,
    brands: catalog.brandCount,
    logoBrandId: withLogo.id,
    lookupBrandId: lookup.id,
    catalogQueries,
    clinical,
    ...(embedded.pid !== undefined && { databasePid: embedded.pid }),
  };
  process.stdout.write(`${JSON.stringify(seed)}\n`);
  process.on('message', (message) => {
    if (message === 'cpu') process.send!(process.cpuUsage());
    // `restart`: the API as a new replica starts it (fresh services and caches, nothing in memory), on the same
    // database. `checkpoint`: the gateway connection's checkpoint written now (as tidy would after KEPT_MS / 2).
    if (message === 'restart')
      void (async () => {
        await services.close();
        services = await buildServices({ config, db: mongo.db, longDb: mongo.longDb, clock: systemClock });
        await services.activeCatalog.refresh();
        ({ app, handler } = api());
        koa = koaListener(app);
        process.send!('restarted');
      })();
    if (message === 'checkpoint')
      void services.observations
        .writeCheckpoint(seed.clinical.gatewayConnectionId)
        .then(() => process.send!('checkpointed'));
  });

  const stop = async () => {
    await mongo.db.dropDatabase().catch(() => {});
    await services.close();
    await unlogged.close();
    await mongo.close();
    await embedded.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('disconnect', () => void stop()); // the driver went away
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
