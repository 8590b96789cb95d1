// Benchmark of a full endpoint health sweep of the whole fixture catalog: every brand the operator builds from
// the brand list fixtures in test/fixtures/brands (loadAllRealBrands: its own parsers and merge, about 32,000
// brands on about 2,300 hosts, Oracle Health's patient host 5,583 of them and eClinicalWorks' healow 5,266)
// checked by the operator's CatalogHealthSweeper through its public-only agent, with the per-host limits,
// against a stub HTTPS server in a child process standing in for every host (host names mapped under fhir.test,
// so the stub's certificate is verified as in production; the stub's own CPU is not counted). Every brand is due
// at once (no catch-up window), so the sweep runs as fast as the limits allow; outcomes are published to the
// embedded database as in production (a database of its own, dropped afterwards). Reports sweep time, checks/s,
// CPU time per check, memory after GC, and what the stub saw per host: requests, peak concurrent requests and
// connections, peak requests in any second. The heap after GC is the whole process's (it also holds the 32,000
// brands twice: loaded, and in the snapshot the sweeper read); the sweeper's own share is what a GC frees once
// it is stopped and dropped. `node --expose-gc dist/bench/catalog/health-sweep.js` (BENCH_ROUNDS=3,
// BENCH_HEALTH_RATE=<requests/s per host>, default 500, BENCH_HEALTH_PER_HOST=2, BENCH_HEALTH_CONCURRENCY=32).
import { fork } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { loadConfig } from '../../api/src/config.js';
import { EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import type { CatalogBrand } from '#core/catalog/model.js';
import { SnapshotStore } from '#core/catalog/snapshots.js';
import { systemClock, systemScheduler } from '#core/clock.js';
import { startEmbeddedDatabase } from '#core/infra/devdb.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { connectMongo } from '#core/infra/mongo.js';
import { healthAgent } from '../../operator/src/health/agent.js';
import { DEFAULT_TIMING, type HealthSettings } from '../../operator/src/health/settings.js';
import { CatalogHealthSweeper } from '../../operator/src/health/sweeper.js';
import { FhirStub } from '../../testkit/fhir-stub.js';
import { healthLookup, STUB_ADDRESS, stubHost } from '../../testkit/health.js';
import { testTls } from '../../testkit/tls.js';
import { loadAllRealBrands } from '../../testkit/real-brands.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SETTINGS: HealthSettings = {
  intervalMs: 6 * 3_600_000,
  concurrency: Number(process.env.BENCH_HEALTH_CONCURRENCY ?? 32),
  perHostConcurrency: Number(process.env.BENCH_HEALTH_PER_HOST ?? 2),
  perHostRate: { count: Number(process.env.BENCH_HEALTH_RATE ?? 500), periodMs: 1000 },
};

interface HostReport {
  host: string;
  requests: number;
  peakInFlight: number;
  peakConnections: number;
  peakPerSecond: number;
}

interface StubReport {
  hosts: number;
  requests: number;
  maxPeakInFlight: number;
  maxPeakConnections: number;
  maxPeakPerSecond: number;
  busiest: HostReport[];
  cpuSeconds: number;
}

type StubMessage = { port: number; ca: string } | { report: StubReport };

/** The stub (child process): answers as well-behaved FHIR servers and reports what it saw when asked. */
async function stubProcess(): Promise<void> {
  const stub = await FhirStub.start({ record: false });
  let cpu = process.cpuUsage();
  process.send!({ port: stub.port, ca: testTls().ca } satisfies StubMessage);
  process.on('message', (message: string) => {
    if (message === 'reset') {
      stub.reset();
      cpu = process.cpuUsage();
      return;
    }
    if (message === 'report') {
      const hosts: HostReport[] = stub.hosts().map((host) => {
        const stats = stub.statsOf(host);
        return {
          host,
          requests: stats.requests,
          peakInFlight: stats.peakInFlight,
          peakConnections: stats.peakConnections,
          peakPerSecond: stub.peakRate(host),
        };
      });
      const used = process.cpuUsage(cpu);
      const max = (field: keyof Omit<HostReport, 'host'>) => Math.max(...hosts.map((h) => h[field]));
      process.send!({
        report: {
          hosts: hosts.length,
          requests: hosts.reduce((sum, h) => sum + h.requests, 0),
          maxPeakInFlight: max('peakInFlight'),
          maxPeakConnections: max('peakConnections'),
          maxPeakPerSecond: max('peakPerSecond'),
          busiest: hosts.sort((a, b) => b.requests - a.requests).slice(0, 4),
          cpuSeconds: (used.user + used.system) / 1e6,
        },
      } satisfies StubMessage);
    }
    if (message === 'stop') void stub.close().then(() => process.exit(0));
  });
}

function ask(child: ReturnType<typeof fork>, message: string): Promise<StubReport> {
  return new Promise((resolve) => {
    const listener = (reply: StubMessage) => {
      if ('report' in reply) {
        child.off('message', listener);
        resolve(reply.report);
      }
    };
    child.on('message', listener);
    child.send(message);
  });
}

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
const gc = () => (globalThis as { gc?: () => void }).gc?.();

async function main(): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ['--stub'], { execArgv: ['--enable-source-maps'] });
  const { port, ca } = await new Promise<{ port: number; ca: string }>((resolve) =>
    child.once('message', (m: StubMessage) => 'port' in m && resolve(m)),
  );
  const real = (await loadAllRealBrands()).brands;
  // Each host (with its port) becomes one host under fhir.test on the stub; paths stay as they were.
  const brands: CatalogBrand[] = real.map((brand) => {
    const url = new URL(brand.fhirBaseUrl);
    return {
      ...brand,
      fhirBaseUrl: `https://${stubHost(url.host)}:${port}${url.pathname === '/' ? '' : url.pathname}`,
    };
  });
  const hostCount = new Set(brands.map((b) => new URL(b.fhirBaseUrl).host)).size;

  const config = loadConfig({ PORTICO_MONGODB_TIMEOUT_MS: '30000', ...process.env, LOG_LEVEL: 'warn' });
  const embedded = await startEmbeddedDatabase({
    port: config.devdbPort,
    dataDir: config.dataDir,
    cacheDir: config.cacheDir,
  });
  const mongo = await connectMongo(embedded.uri, `bench_health_${process.pid}`, {
    timeoutMs: config.mongodbTimeoutMs,
    longTimeoutMs: config.mongodbLongTimeoutMs,
  });
  const results: Record<string, number>[] = [];
  console.log(
    `health sweep: ${brands.length} brands on ${hostCount} hosts; limits ${JSON.stringify({ ...SETTINGS, intervalMs: undefined })}; ${os.availableParallelism()} cores`,
  );
  try {
    await mongo.db.dropDatabase();
    const locks = await documentLocksFor(mongo.db, undefined);
    const snapshots = new SnapshotStore(mongo.longDb, locks, systemClock);
    await snapshots.init();
    const store = new EndpointHealthStore(mongo.longDb, locks, systemClock);
    for (let round = 1; round <= ROUNDS; round++) {
      const ref = { namespace: 'bench', name: `health-${round}` };
      const { header } = await snapshots.write(ref, brands);
      await snapshots.activate(ref, header.id, null);
      child.send('reset');
      const loadBefore = os.loadavg()[0]!;
      let checks = 0;
      let done: () => void = () => {};
      const finished = new Promise<void>((resolve) => (done = resolve));
      let sweeper: CatalogHealthSweeper | undefined = new CatalogHealthSweeper({
        ref,
        snapshots,
        store,
        settings: SETTINGS,
        timing: { ...DEFAULT_TIMING, catchUpMs: 0 },
        agent: healthAgent(SETTINGS, { lookup: healthLookup, admitted: new Set([STUB_ADDRESS]), ca }),
        clock: systemClock,
        scheduler: systemScheduler,
        logger: pino({ level: 'warn' }),
        observer: { request: () => {}, throttled: () => {}, check: () => ++checks === brands.length && done() },
      });
      const cpu = process.cpuUsage();
      const started = performance.now();
      const peak = { heapUsed: 0, rss: 0 };
      const sampler = setInterval(() => {
        const now = process.memoryUsage();
        peak.heapUsed = Math.max(peak.heapUsed, now.heapUsed);
        peak.rss = Math.max(peak.rss, now.rss);
      }, 100);
      await sweeper.start();
      await finished;
      clearInterval(sampler);
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      gc();
      const alive = process.memoryUsage();
      const publishStarted = performance.now();
      await sweeper.stop(); // publishes the last outcomes: a whole catalog's publication, timed
      const publishSeconds = (performance.now() - publishStarted) / 1000;
      const summary = sweeper.summary();
      sweeper = undefined;
      gc();
      gc();
      const released = process.memoryUsage().heapUsed;
      const stub = await ask(child, 'report');
      const result = {
        round,
        brands: brands.length,
        seconds: Number(seconds.toFixed(1)),
        checksPerSecond: Math.round(brands.length / seconds),
        cpuMsPerCheck: Number(((used.user + used.system) / 1000 / brands.length).toFixed(3)),
        lastPublishSeconds: Number(publishSeconds.toFixed(2)),
        up: summary.counts.UP,
        heapAfterGcMb: mb(alive.heapUsed),
        // What the sweeper itself holds for the catalog (its brands, outcomes, validators, schedule, limits).
        sweeperHeapMb: mb(alive.heapUsed - released),
        rssMb: mb(alive.rss),
        peakHeapMb: mb(peak.heapUsed),
        peakRssMb: mb(peak.rss),
        stubRequests: stub.requests,
        maxPeakConnectionsPerHost: stub.maxPeakConnections,
        maxPeakInFlightPerHost: stub.maxPeakInFlight,
        maxRequestsPerHostPerSecond: stub.maxPeakPerSecond,
        stubCpuMsPerRequest: Number(((stub.cpuSeconds * 1000) / stub.requests).toFixed(3)),
        loadAverage1mStart: Number(loadBefore.toFixed(2)),
        loadAverage1mEnd: Number(os.loadavg()[0]!.toFixed(2)),
      };
      results.push(result);
      console.log(JSON.stringify(result));
      console.log(
        `  busiest hosts: ${stub.busiest.map((h) => `${h.host} ${h.requests} requests, ${h.peakInFlight} at once, ${h.peakConnections} connections, ${h.peakPerSecond}/s peak`).join('; ')}`,
      );
      if (summary.counts.UP !== brands.length || stub.requests !== 2 * brands.length)
        throw new Error(`round ${round}: ${summary.counts.UP} UP of ${brands.length}, ${stub.requests} requests`);
      if (
        stub.maxPeakConnections > SETTINGS.perHostConcurrency ||
        stub.maxPeakInFlight > SETTINGS.perHostConcurrency ||
        stub.maxPeakPerSecond > SETTINGS.perHostRate.count
      ) {
        throw new Error(`round ${round}: a host saw more than the limits allow`);
      }
    }
    const range = (field: string) => {
      const values = results.map((r) => r[field]!);
      return `${Math.min(...values)}–${Math.max(...values)}`;
    };
    console.log(
      `health sweep over ${results.length} rounds: ${range('seconds')} s, ${range('checksPerSecond')} checks/s, ${range('cpuMsPerCheck')} ms CPU per check, heap after GC ${range('heapAfterGcMb')} MB (the sweeper's own ${range('sweeperHeapMb')} MB), ` +
        `peak ${range('maxPeakConnectionsPerHost')} connections and ${range('maxPeakInFlightPerHost')} requests at once per host, ${range('maxRequestsPerHostPerSecond')} requests per host-second at most; load average ${range('loadAverage1mEnd')}`,
    );
  } finally {
    await mongo.db.dropDatabase().catch(() => {});
    await mongo.close();
    await embedded.stop();
    child.send('stop');
  }
}

if (process.argv.includes('--stub')) await stubProcess();
else await main();
