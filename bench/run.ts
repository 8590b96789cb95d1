// `npm run bench` (HTTP part): each API operation against a raw node:http hello-world served by the same
// process, interleaved (raw, op, op, …, raw, …) so drift on a shared machine hits both sides alike. Figures
// are ratios to raw, and the server's CPU time per request (less disturbed by a busy machine than req/s).
// Nothing here is asserted by the test suite.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { measure, type Measurement, type Target } from './autocannon.js';
import type { Seed } from './server.js';
import { spreadObservations } from './clinical-seed.js';
import { observationBundle } from '../testkit/observations.js';

const INGEST_RUNS = Number(process.env.BENCH_INGEST_RUNS ?? 3);
/** Ingest bundles back to back rather than each once the database is idle. */
const INGEST_BACK_TO_BACK = process.env.BENCH_INGEST_BACK_TO_BACK === '1';
/** How long gateway searches are timed under a steady ingest. */
const STEADY_SECONDS = Number(process.env.BENCH_STEADY_SECONDS ?? 20);

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
/** Cold reads use up a patient each: shorter runs, so the seeded ones last. */
const COLD_SECONDS = Math.min(SECONDS, 2);
/** BENCH_ONLY=<regular expression>: measure only the targets whose names match (raw is always measured). */
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY, 'i') : undefined;

/** Typical "find your health system" input: two words, the last one often still being typed. */
const TWO_WORD_QUERIES = [
  'mercy medical',
  'st mary',
  'university hosp',
  'childrens hos',
  'baptist health',
  'general hospital',
  'family medicine',
  'new york',
  'kaiser perm',
  'memorial hermann',
  'regional medical',
  'mayo clinic',
  'health system',
  'valley health',
  'community hosp',
  'sutter health',
];

type Row = Target & { goal?: number; seconds?: number };

/**
 * With two or more cores, the servers and the load generator are pinned to different cores (taskset), so
 * the scheduler cannot sometimes put them on one core and halve a run; otherwise they share.
 */
function pinning(): { server: string[]; driver: () => void } {
  const cores = availableParallelism();
  const taskset = spawnSync('taskset', ['--version']).status === 0;
  if (cores < 2 || !taskset) return { server: [], driver: () => {} };
  return {
    server: ['taskset', '-c', String(cores - 1)],
    driver: () => spawnSync('taskset', ['-cp', `0-${cores - 2}`, String(process.pid)]),
  };
}

function startServer(): Promise<{ seed: Seed; child: ChildProcess }> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const pin = pinning();
  pin.driver();
  // BENCH_PROFILE_DIR=<dir>: the server writes a V8 CPU profile there when it stops.
  const profile = process.env.BENCH_PROFILE_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
    : [];
  const [command, ...args] = [
    ...pin.server,
    process.execPath,
    ...profile,
    '--enable-source-maps',
    path.join(here, 'server.js'),
  ];
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`benchmark server exited with ${code}`)));
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve({ seed: JSON.parse(out.slice(0, out.indexOf('\n'))) as Seed, child });
    });
  });
}

/** The server process's CPU time so far, in microseconds. */
function cpuOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (usage) => resolve((usage as NodeJS.CpuUsage).user + (usage as NodeJS.CpuUsage).system));
    child.send('cpu');
  });
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

/**
 * The embedded database's CPU time so far (µs): utime + stime of /proc/<pid>/stat (fields 14 and 15, in clock
 * ticks, so 10 ms steps), every thread of the FerretDB process included. Undefined when unknown.
 */
function databaseCpuOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 on: the name may hold spaces
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

interface Measured extends Measurement {
  cpuUsPerRequest: number;
  /** The embedded database's CPU time per request, and per second (what it spends when idle shows in raw's). */
  dbCpuUsPerRequest?: number;
  dbCpuUsPerSecond?: number;
}

async function measureWithCpu(child: ChildProcess, databasePid: number | undefined, target: Row): Promise<Measured> {
  const before = await cpuOf(child);
  const dbBefore = databaseCpuOf(databasePid);
  const started = performance.now();
  const measured = await measure(target, target.seconds ?? SECONDS, CONNECTIONS);
  const dbAfter = databaseCpuOf(databasePid);
  const seconds = (performance.now() - started) / 1000;
  const after = await cpuOf(child);
  const db = dbBefore === undefined || dbAfter === undefined ? undefined : dbAfter - dbBefore;
  return {
    ...measured,
    cpuUsPerRequest: (after - before) / Math.max(1, measured.requests),
    ...(db !== undefined && { dbCpuUsPerRequest: db / Math.max(1, measured.requests), dbCpuUsPerSecond: db / seconds }),
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function main(): Promise<void> {
  const { seed, child } = await startServer();
  const auth = { authorization: `Bearer ${seed.key}` };
  let cold = 0;
  let floor = 0;
  const probePath = `/api/sdk/v1/app-users/${seed.clinical.pollerId}/lifecycle`;
  const probeAuth = { authorization: `Bearer ${seed.clinical.publishableKey}` };
  const nextColdPatient = () => `/api/platform/v1/patients/${seed.coldPatientIds[cold++ % seed.coldPatientIds.length]}`;
  const raw: Row = { name: 'raw node:http hello world', url: seed.raw, expectStatus: 200 };
  const search = (base: string): Pick<Target, 'url' | 'paths'> => ({
    url: `${base}/api/sdk/v1/catalog/brands`,
    paths: TWO_WORD_QUERIES.map((q) => `/api/sdk/v1/catalog/brands?q=${encodeURIComponent(q)}&limit=25`),
  });
  const all: Row[] = [
    {
      name: 'GET /patients/{id} → 200, cache hit',
      url: `${seed.api}/api/platform/v1/patients/${seed.patientId}`,
      headers: auth,
      expectStatus: 200,
      goal: 0.15,
    },
    {
      name: 'GET /patients/{id} → 304, cache hit',
      url: `${seed.api}/api/platform/v1/patients/${seed.patientId}`,
      headers: { ...auth, 'if-none-match': '"1"' },
      expectStatus: 304,
      goal: 0.45,
    },
    {
      name: 'GET /patients/{id} → 304, cache hit, Koa route',
      url: `${seed.koa}/api/platform/v1/patients/${seed.patientId}`,
      headers: { ...auth, 'if-none-match': '"1"' },
      expectStatus: 304,
    },
    {
      name: 'GET /app-users/{id}/lifecycle → 200 (probe)',
      url: `${seed.api}${probePath}`,
      headers: probeAuth,
      expectStatus: 200,
      goal: 0.4,
    },
    {
      name: 'GET /app-users/{id}/lifecycle → 304 (probe)',
      url: `${seed.api}${probePath}`,
      headers: { ...probeAuth, 'if-none-match': '"LIMITED"' },
      expectStatus: 304,
      goal: 0.5,
    },
    {
      name: 'GET /app-users/{id}/lifecycle → 304 (probe), Koa route',
      url: `${seed.koa}${probePath}`,
      headers: { ...probeAuth, 'if-none-match': '"LIMITED"' },
      expectStatus: 304,
    },
    {
      name: 'GET /patients/{id} → 200, cold (a patient never read before)',
      url: seed.api,
      nextPath: nextColdPatient,
      headers: auth,
      expectStatus: 200,
      seconds: COLD_SECONDS,
    },
    {
      // No goal: what the driver's one read costs alone, so the cold row's CPU less this is Portico's own.
      name: 'raw node:http + the same one find by _id through the same driver (the floor of a cold read)',
      url: seed.raw,
      nextPath: () => `/find/${seed.coldPatientIds[floor++ % seed.coldPatientIds.length]}`,
      expectStatus: 200,
      seconds: COLD_SECONDS,
    },
    {
      name: `GET /webhook-endpoints?limit=25 (${seed.endpoints} live), cache hit`,
      url: `${seed.api}/api/platform/v1/webhook-endpoints?limit=25`,
      headers: auth,
      expectStatus: 200,
      goal: 0.15,
    },
    {
      name: `GET /catalog/brands two-word search, limit 25, fast path (${seed.brands} brands)`,
      ...search(seed.api),
      expectStatus: 200,
      goal: 0.4,
    },
    {
      name: 'GET /catalog/brands/{id}, fast path',
      url: `${seed.api}/api/sdk/v1/catalog/brands/${seed.lookupBrandId}`,
      expectStatus: 200,
      goal: 0.65,
    },
    {
      name: 'GET /catalog/brands/{id}/logo → 307, fast path',
      url: `${seed.api}/api/sdk/v1/catalog/brands/${seed.logoBrandId}/logo?size=128`,
      expectStatus: 307,
      goal: 0.65,
    },
    ...catalogSearchRows(seed),
    { name: 'GET /catalog/brands two-word search, Koa route', ...search(seed.koa), expectStatus: 200 },
    {
      name: 'GET /catalog/brands/{id}, Koa route',
      url: `${seed.koa}/api/sdk/v1/catalog/brands/${seed.lookupBrandId}`,
      expectStatus: 200,
    },
    {
      name: 'GET /catalog/brands/{id}/logo → 307, Koa route',
      url: `${seed.koa}/api/sdk/v1/catalog/brands/${seed.logoBrandId}/logo?size=128`,
      expectStatus: 307,
    },
  ];
  const targets = ONLY ? all.filter((t) => ONLY.test(t.name)) : all;
  if (targets.some((t) => /typo/.test(t.name))) await expectFuzzy(seed);
  const gateway: Row = {
    name: `POST /observations/_search code + date, _count=50 (${seed.clinical.observations} in the connection)`,
    url: `${seed.api}/api/sdk/v1/observations/_search`,
    method: 'POST' as const,
    headers: { authorization: `Bearer ${seed.clinical.appSecretKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      connectionId: seed.clinical.gatewayConnectionId,
      code: 'http://loinc.org|8867-4',
      date: ['ge2020-01-01'],
      _count: 50,
    }),
    expectStatus: 200,
    goal: 0.12,
  };
  // The same search on a replica of the same API whose gateway records nothing: the access log's cost is the
  // difference between the two rows, measured in the same rounds. (The gateway row keeps its name: comparisons
  // between runs match rows by name.)
  const unlogged: Row = {
    ...gateway,
    name: `${gateway.name}, access log off`,
    url: `${seed.apiUnlogged}/api/sdk/v1/observations/_search`,
    goal: undefined,
  };
  if (!ONLY || ONLY.test(gateway.name)) {
    await firstSearches(gateway, child);
    // The same number of bytes from raw node:http: what the answer's size alone costs (no goal; for reading the
    // gateway's ratio).
    const size = Buffer.byteLength(
      await (await fetch(gateway.url, { method: 'POST', headers: gateway.headers, body: gateway.body })).text(),
    );
    targets.push(gateway);
    if (!ONLY || ONLY.test(unlogged.name)) targets.push(unlogged);
    targets.push({
      name: `raw node:http, a static ${Math.round(size / 1000)} KB body (the gateway answer's size)`,
      url: `${seed.raw}/bytes/${size}`,
      expectStatus: 200,
    });
  } else if (ONLY.test(unlogged.name)) targets.push(unlogged);

  console.log(
    `HTTP benchmark: ${ROUNDS} interleaved rounds × ${SECONDS} s per target (${COLD_SECONDS} s for cold reads), ${CONNECTIONS} connections, node ${process.version}, ${cpus().length} cores (server on one, load generator on the rest), load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  if (!ONLY || ONLY.test('ingest')) await ingestRuns(seed, child);
  const warmUp = (target: Row) => measure({ ...target }, 1, CONNECTIONS);
  await warmUp(raw);
  for (const target of targets) await warmUp(target);

  // Each round measures raw next to every target, so a ratio compares runs seconds apart; the median over
  // rounds discards a round disturbed by something else on the machine.
  const rounds: Map<string, Measured>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const measured = new Map<string, Measured>();
    for (const target of [raw, ...targets])
      measured.set(target.name, await measureWithCpu(child, seed.databasePid, target));
    rounds.push(measured);
  }
  if (!ONLY || ONLY.test(gateway.name)) await searchesUnderIngest(seed, gateway);
  child.kill('SIGTERM');

  const rawRps = rounds.map((r) => r.get(raw.name)!.requestsPerSecond);
  const cpu = (name: string) => Math.round(median(rounds.map((r) => r.get(name)!.cpuUsPerRequest)));
  const dbCpu = (name: string, per: 'dbCpuUsPerRequest' | 'dbCpuUsPerSecond' = 'dbCpuUsPerRequest') =>
    seed.databasePid === undefined ? '' : Math.round(median(rounds.map((r) => r.get(name)![per] ?? NaN)));
  const rows = [
    {
      target: raw.name,
      'req/s': Math.round(median(rawRps)),
      ratio: '1.00',
      'CPU µs/req': cpu(raw.name),
      'DB CPU µs/req': dbCpu(raw.name),
      goal: '',
      verdict: '',
      errors: rounds.reduce((s, r) => s + r.get(raw.name)!.errors, 0),
    },
    ...targets.map((t) => {
      const ratio = median(rounds.map((r, i) => r.get(t.name)!.requestsPerSecond / rawRps[i]!));
      const errors = rounds.reduce((s, r) => s + r.get(t.name)!.errors, 0);
      const verdict = t.goal === undefined ? '' : ratio >= t.goal && errors === 0 ? 'met' : 'MISSED';
      return {
        target: t.name,
        'req/s': Math.round(median(rounds.map((r) => r.get(t.name)!.requestsPerSecond))),
        ratio: ratio.toFixed(2),
        'CPU µs/req': cpu(t.name),
        'DB CPU µs/req': dbCpu(t.name),
        goal: t.goal === undefined ? '' : `≥ ${t.goal}`,
        verdict,
        errors,
      };
    }),
  ];
  console.table(rows);
  console.log(
    "ratio = median over rounds of (target req/s ÷ raw req/s in the same round); CPU µs/req = the server process's user + system time per request, median over rounds",
  );
  console.log(
    seed.databasePid === undefined
      ? 'DB CPU: not measured (the embedded database was already running, started by another process)'
      : `DB CPU µs/req = the embedded database process's (FerretDB's) user + system time per request, median over rounds, in 10 ms steps; it includes its background work: ${dbCpu(raw.name, 'dbCpuUsPerSecond')} µs/s during the raw runs`,
  );
  console.log(
    `cold reads: ${cold} requests over ${seed.coldPatientIds.length} seeded patients${cold > seed.coldPatientIds.length ? ' (MORE than seeded: some were warm; raise BENCH_COLD_PATIENTS)' : ', each read once'}`,
  );
}

/** Sends the server a message and waits for its answer. */
function ask(child: ChildProcess, message: string, answer: string): Promise<void> {
  return new Promise((resolve) => {
    const listener = (reply: unknown) => {
      if (reply !== answer) return;
      child.off('message', listener);
      resolve();
    };
    child.on('message', listener);
    child.send(message);
  });
}

/**
 * The gateway's first search of the connection loads its index (a replica keeps one per connection): timed once
 * in the process that ingested it, once after an API restart with the bundles' records alone (what a connection
 * ingested in the last KEPT_MS has), and once after a restart from the connection's checkpoint.
 */
async function firstSearches(target: Row, child: ChildProcess): Promise<void> {
  const rows: Record<string, string | number | undefined>[] = [];
  const timed = async (when: string, from: string) => {
    const cpu = await cpuOf(child);
    const started = performance.now();
    const res = await fetch(target.url, { method: 'POST', headers: target.headers, body: target.body });
    const answer = (await res.json()) as { total?: number };
    if (res.status !== 200) throw new Error(`the gateway answered ${res.status}: ${JSON.stringify(answer)}`);
    const ms = performance.now() - started;
    const cpuMs = ((await cpuOf(child)) - cpu) / 1000;
    rows.push({
      when,
      'index from': from,
      'wall ms': Math.round(ms),
      'server CPU ms': Math.round(cpuMs),
      total: answer.total,
      goal: '≤ 1000 ms',
      verdict: ms <= 1000 ? 'met' : 'MISSED',
    });
  };
  await timed('after the ingests, same process', "the bundles' records");
  await ask(child, 'restart', 'restarted');
  await timed('after an API restart', "the bundles' records");
  await ask(child, 'checkpoint', 'checkpointed');
  await ask(child, 'restart', 'restarted');
  await timed('after an API restart', 'its checkpoint');
  console.log("Gateway: the first search of a connection (loading the replica's index of it), embedded database:");
  console.table(rows);
}

/**
 * Gateway searches, one after another, while the searched connection takes a bundle of 50 new observations every
 * 2 s (each ingest makes the next search on the replica bring its index up to date): the searches' latency.
 */
async function searchesUnderIngest(seed: Seed, target: Row): Promise<void> {
  const until = performance.now() + STEADY_SECONDS * 1000;
  const ingests: number[] = [];
  const ingesting = (async () => {
    while (performance.now() < until) {
      const started = performance.now();
      const res = await fetch(
        `${seed.api}/api/platform/v1/connections/${seed.clinical.gatewayConnectionId}/observations`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${seed.clinical.clinicalKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(observationBundle(spreadObservations(50))),
        },
      );
      await res.text();
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}`);
      ingests.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2000 - (performance.now() - started))));
    }
  })();
  const latencies: number[] = [];
  while (performance.now() < until) {
    const started = performance.now();
    const res = await fetch(target.url, { method: 'POST', headers: target.headers, body: target.body });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`the gateway answered ${res.status}`);
    latencies.push(performance.now() - started);
  }
  await ingesting;
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1);
  console.log(
    `Gateway searches one after another for ${STEADY_SECONDS} s while the connection ingests 50 observations every 2 s (${ingests.length} ingests, median ${median(ingests).toFixed(0)} ms): ${sorted.length} searches, median ${at(0.5)} ms, p90 ${at(0.9)} ms, p99 ${at(0.99)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`,
  );
}

/**
 * Catalog searches beyond the fixed two-word list (bench/catalog/http-queries.ts), all on the fast path, no goals:
 * a fixed list of typos and of near=<ZIP> searches asked over and over (answered from the answer cache, as popular
 * queries are), and lists of distinct queries, each asked once in turn, that the cache never holds when they come
 * round again (what an uncached search costs: plain prefixes, typos, near=<ZIP>).
 */
function catalogSearchRows(seed: Seed): Row[] {
  const queries = seed.catalogQueries;
  const path = (query: string) => `/api/sdk/v1/catalog/brands?${query}`;
  const url = `${seed.api}/api/sdk/v1/catalog/brands`;
  const inTurn = (list: string[]) => {
    let next = 0; // never reset: later rounds go on through the list rather than repeat its start
    return () => path(list[next++ % list.length]!);
  };
  const distinct = (list: string[]) =>
    `${list.length} distinct${list.length > queries.cacheEntries ? '' : ` (NOT more than the cache's ${queries.cacheEntries} entries: some hit)`}`;
  return [
    {
      name: `GET /catalog/brands typos (fuzzy), ${queries.typos.length} in turn, fast path`,
      url,
      paths: queries.typos.map(path),
      expectStatus: 200,
    },
    {
      name: `GET /catalog/brands near=<ZIP>, ${queries.near.length} in turn (with and without q), fast path`,
      url,
      paths: queries.near.map(path),
      expectStatus: 200,
    },
    {
      name: `GET /catalog/brands two-word prefixes, each new: cache misses (${distinct(queries.distinct)}), fast path`,
      url,
      nextPath: inTurn(queries.distinct),
      expectStatus: 200,
      goal: 0.25,
    },
    {
      name: `GET /catalog/brands typos (fuzzy), each new: cache misses (${distinct(queries.distinctTypos)}), fast path`,
      url,
      nextPath: inTurn(queries.distinctTypos),
      expectStatus: 200,
      goal: 0.25,
    },
    {
      name: `GET /catalog/brands near=<ZIP>, each new: cache misses (${distinct(queries.distinctNear)}), fast path`,
      url,
      nextPath: inTurn(queries.distinctNear),
      expectStatus: 200,
      goal: 0.25,
    },
    // A yardstick for the misses' goal (no goal of its own): raw node:http answering 2 KB (a prefix miss's size; near a
    // ZIP code, answers are 6-10 KB) after 25 us of computing. Its ratio is what any path that adds 25 us of work to
    // raw's reaches: the per-request costs of node:http and the kernel grow as the rate falls, so ratios are not
    // proportional to the work added.
    {
      name: 'raw node:http, a 2 KB body after 25 µs of work (each new: the yardstick of a miss)',
      url: `${seed.raw}/work/25/2048`,
      expectStatus: 200,
    },
  ];
}

/**
 * The typo rows measure the typo-tolerant fallback only if their answers come from it: brands marked fuzzy. The
 * distinct ones are sampled from the end of their list, which the row reaches after more other queries than the
 * cache holds.
 */
async function expectFuzzy(seed: Seed): Promise<void> {
  const sample = [...seed.catalogQueries.typos, ...seed.catalogQueries.distinctTypos.slice(-20)];
  for (const query of sample) {
    const answer = await (await fetch(`${seed.api}/api/sdk/v1/catalog/brands?${query}`)).text();
    if (!answer.includes('"fuzzy":true')) throw new Error(`${query}: no fuzzy brands in ${answer.slice(0, 200)}`);
  }
}

/**
 * Clinical ingest: 1000-entry bundles of new observations posted one after another, each sent a second time
 * at once (every id then exists: the re-ingest that used to lock the embedded database), timed from here.
 */
/**
 * Resolves once the embedded database has been idle (under 10 % of a core over 500 ms) or after `maxMs`: how long it
 * took. What an ingest leaves to do after its answer (its replacements, a checkpoint) shows here, apart from the answer.
 */
async function databaseSettled(pid: number | undefined, maxMs = 60_000): Promise<number> {
  const started = performance.now();
  if (pid === undefined) return 0;
  for (;;) {
    const before = databaseCpuOf(pid)!;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const busyUs = databaseCpuOf(pid)! - before;
    if (busyUs < 50_000 || performance.now() - started > maxMs) return performance.now() - started;
  }
}

async function ingestRuns(seed: Seed, child: ChildProcess): Promise<void> {
  const rows = [];
  for (let run = 0; run < INGEST_RUNS; run++) {
    const body = JSON.stringify(observationBundle(spreadObservations(1000)));
    for (const ids of ['new', 'existing']) {
      // Back to back, each bundle shares the database with what the last one left to do after its answer.
      const settledMs = INGEST_BACK_TO_BACK ? undefined : await databaseSettled(seed.databasePid);
      const before = await cpuOf(child);
      const started = performance.now();
      const res = await fetch(
        `${seed.api}/api/platform/v1/connections/${seed.clinical.ingestConnectionId}/observations`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${seed.clinical.clinicalKey}`, 'content-type': 'application/json' },
          body,
        },
      );
      const answer = await res.text();
      const ms = performance.now() - started;
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${answer}`);
      rows.push({
        run: run + 1,
        ids,
        'bundle MB': Number((body.length / 1e6).toFixed(2)),
        'wall ms': Math.round(ms),
        'server CPU ms': Math.round(((await cpuOf(child)) - before) / 1000),
        ...(settledMs !== undefined && { 'waited for the database ms': Math.round(settledMs) }),
        answer,
        goal: '≤ 1000 ms',
        verdict: ms <= 1000 ? 'met' : 'MISSED',
      });
    }
  }
  console.log(
    `Clinical ingest of a 1000-entry bundle, new observations then the same bundle again (embedded database; ${INGEST_BACK_TO_BACK ? 'back to back' : 'each once the database is idle: the wait is what the last one left to do after its answer'}):`,
  );
  console.table(rows);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
