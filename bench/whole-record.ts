// Benchmark of the whole record (docs/api.md, "The whole record"), `node dist/bench/whole-record.js`, part of `npm run
// bench`. The API as a real process on the embedded database, the sandbox EHR in this process serving one Synthea
// patient of a whole long life (test/fixtures/synthea/large: about 11,000 resources of the record types, notes and
// reports as attachments). Each of BENCH_WHOLE_ROUNDS rounds (2):
//  1. the first sync of that patient, timed from the sign-in's callback to the sync's end: wall time, resources/s, the
//     API's CPU per resource (from /proc) and its peak RSS (VmHWM, reset before where Linux allows);
//  2. searches of one type on that connection, as a ratio to raw node:http served by this process, interleaved (raw,
//     op, raw, op), with the API's CPU per request: `Observation?category=laboratory&_count=50` (the observation
//     gateway's own search), `Condition?clinical-status=active` and `Procedure?status=completed&_count=50` (record
//     searches);
//  3. `Patient/{id}/$everything` walked whole, 100 a page: pages, wall time, resources/s.
// Goals (docs/benchmarks.md): first sync ≤ 15 s; a type search ≥ 0.10× raw node:http.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { COMPARTMENT_TYPES, RECORD_TYPES } from '../api/src/features/clinical/record-types.js';
import { syntheaFiles, syntheaPatient, SYNTHEA_FIXTURES } from '../sandbox/src/fhir/synthea.js';
import { measure } from './autocannon.js';
import { cpuMs, memoryMiB, resetPeak } from './process-stats.js';
import { startSyncBenchWorld } from './sync/world.js';

const ROUNDS = Number(process.env.BENCH_WHOLE_ROUNDS ?? 2);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 10;
const LARGE = `${SYNTHEA_FIXTURES}/large`;

const grouped = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const load = () => loadavg()[0]!.toFixed(1);

async function main(): Promise<void> {
  const file = syntheaFiles(LARGE)[0]!;
  const resources = syntheaPatient(file, LARGE);
  const served = resources.filter((r) => (COMPARTMENT_TYPES as readonly string[]).includes(r.resourceType)).length;
  const types = new Set(resources.filter((r) => RECORD_TYPES.includes(r.resourceType)).map((r) => r.resourceType));
  console.log(
    `start: load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
  console.log(
    `\nThe whole record: the API as a process (embedded database), the sandbox EHR in the benchmark's process serving ` +
      `${file} (${grouped(resources.length)} resources, ${grouped(served)} of the patient's compartment in ${types.size} record types)`,
  );
  console.log(
    `(node ${process.version}, ${cpus().length} cores; ${ROUNDS} rounds; goals: first sync ≤ 15 s, a type search ≥ 0.10× raw)`,
  );

  const patients = Array.from({ length: ROUNDS }, (_, i) => ({
    id: `old-${i + 1}`,
    username: `old-${i + 1}`,
    password: 'sandbox',
    name: 'Deandre Auer',
    birthDate: '1928-01-01',
    observations: 0,
    record: `large/${file}`,
  }));
  const world = await startSyncBenchWorld({
    patients,
    grants: { resourceTypes: ['*'], loincCodes: ['*'], confidentiality: ['N'], sensitivity: [], lookbackDays: null },
  });
  const raw = createServer((_req, res) => res.end('hello world'));
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`;
  try {
    console.log(
      `\n| round | first sync | resources stored | resources/s | attachments | API CPU a resource | API peak RSS | load |`,
    );
    console.log(`|---|---|---|---|---|---|---|---|`);
    const connections: { id: string; patient: string }[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const appUserId = `whole-${round}`;
      let cpuBefore = 0;
      let started = 0;
      let peakReset = false;
      await world.connect(patients[round - 1]!.id, appUserId, () => {
        peakReset = resetPeak(world.api.pid);
        cpuBefore = cpuMs(world.api.pid);
        started = performance.now();
      });
      for (;;) {
        const user = await world.call('GET', `/api/platform/v1/app-users/${appUserId}`, world.sk);
        const connection = user.connections?.[0];
        const sync = connection?.sync;
        if (sync?.status === 'FAILED') throw new Error(`the sync failed: ${sync.lastError}`);
        if (sync?.lastSyncedAt) {
          const seconds = (performance.now() - started) / 1000;
          const cpu = cpuMs(world.api.pid) - cpuBefore;
          const stored = sync.resources as number;
          const attachments = world.ehr.stats.binaryReads;
          world.ehr.stats.reset();
          console.log(
            `| ${round} | ${seconds.toFixed(2)} s | ${grouped(stored)} | ${grouped(stored / seconds)} | ${grouped(attachments)} ` +
              `| ${grouped((cpu * 1000) / stored)} µs | ${memoryMiB(world.api.pid).peak.toFixed(0)} MiB${peakReset ? '' : ' (since start)'} | ${load()} |`,
          );
          connections.push({ id: connection.id, patient: connection.patient });
          break;
        }
        const wait = Math.min(250, Math.max(20, (performance.now() - started) / 100));
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }

    const [connection] = connections;
    const base = `${world.api.url}/api/sdk/v1/fhir/connections/${connection!.id}`;
    const headers = { authorization: `Bearer ${world.app.secretKey}` };
    // The observation gateway's own search (its parameters only), then record searches of two types.
    const searches = [
      'Observation?category=laboratory&_count=50',
      'Condition?clinical-status=active',
      'Procedure?status=completed&_count=50',
    ];
    for (const search of searches) {
      const first = await fetch(`${base}/${search}`, { headers });
      if (first.status !== 200) throw new Error(`${search}: ${first.status} ${await first.text()}`);
      const body = (await first.json()) as { total: number };
      await measure({ name: 'warm-up', url: `${base}/${search}`, headers, expectStatus: 200 }, 1, CONNECTIONS);
      const ratios: number[] = [];
      const cpus: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const rawRun = await measure({ name: 'raw', url: rawUrl, expectStatus: 200 }, SECONDS, CONNECTIONS);
        const before = cpuMs(world.api.pid);
        const run = await measure(
          { name: search, url: `${base}/${search}`, headers, expectStatus: 200 },
          SECONDS,
          CONNECTIONS,
        );
        if (run.errors > 0) throw new Error(`${search}: ${run.errors} errors`);
        cpus.push(((cpuMs(world.api.pid) - before) * 1000) / run.requests);
        ratios.push(run.requestsPerSecond / rawRun.requestsPerSecond);
      }
      console.log(
        `\n${search} (total ${grouped(body.total)}): ${ratios.map((r) => `${r.toFixed(3)}×`).join(', ')} raw node:http; ` +
          `API CPU ${cpus.map((c) => `${grouped(c)} µs`).join(', ')} a request (load ${load()})`,
      );
    }

    for (let round = 1; round <= ROUNDS; round++) {
      const started = performance.now();
      let url: string | undefined = `${base}/Patient/${connection!.patient}/$everything?_count=100`;
      let pages = 0;
      let entries = 0;
      while (url) {
        const res = await fetch(url, { headers });
        if (res.status !== 200) throw new Error(`$everything: ${res.status} ${await res.text()}`);
        const page = (await res.json()) as { entry?: unknown[]; link: { relation: string; url: string }[] };
        pages++;
        entries += page.entry?.length ?? 0;
        url = page.link.find((l) => l.relation === 'next')?.url;
      }
      const seconds = (performance.now() - started) / 1000;
      console.log(
        `\n$everything round ${round}: ${grouped(entries)} resources in ${pages} pages of 100, ${seconds.toFixed(2)} s ` +
          `(${grouped(entries / seconds)} resources/s, load ${load()})`,
      );
    }
    console.log(
      `end: load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}`,
    );
  } finally {
    raw.close();
    await world.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
