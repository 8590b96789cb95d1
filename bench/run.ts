// `npm run bench`: each API operation against a raw node:http hello-world served by the same process,
// interleaved (raw, op, op, …, raw, …) so drift on a shared machine hits both sides alike. Figures are
// ratios to raw; nothing here is asserted by the test suite.
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { measure, type Measurement, type Target } from './autocannon.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

/** Typical "find your health system" input: two words, the last one often still being typed. */
const TWO_WORD_QUERIES = ['mercy medical', 'st mary', 'university hosp', 'childrens hos', 'baptist health', 'general hospital', 'family medicine', 'new york', 'kaiser perm', 'memorial hermann', 'regional medical', 'mayo clinic', 'health system', 'valley health', 'community hosp', 'sutter health'];

interface Seed {
  raw: string;
  api: string;
  key: string;
  patientId: string;
  endpoints: number;
  brands: number;
  logoBrandId: string;
  lookupBrandId: string;
}

/**
 * With two or more cores, the servers and the load generator are pinned to different cores (taskset), so
 * the scheduler cannot sometimes put them on one core and halve a run; otherwise they share.
 */
function pinning(): { server: string[]; driver: () => void } {
  const cores = availableParallelism();
  const taskset = spawnSync('taskset', ['--version']).status === 0;
  if (cores < 2 || !taskset) return { server: [], driver: () => {} };
  return { server: ['taskset', '-c', String(cores - 1)], driver: () => spawnSync('taskset', ['-cp', `0-${cores - 2}`, String(process.pid)]) };
}

function startServer(): Promise<{ seed: Seed; stop: () => void }> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const pin = pinning();
  pin.driver();
  const [command, ...args] = [...pin.server, process.execPath, '--enable-source-maps', path.join(here, 'server.js')];
  const child = spawn(command!, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`benchmark server exited with ${code}`)));
    child.stdout!.once('data', (chunk: Buffer) => resolve({ seed: JSON.parse(chunk.toString()) as Seed, stop: () => child.kill('SIGTERM') }));
  });
}

async function main(): Promise<void> {
  const { seed, stop } = await startServer();
  const auth = { authorization: `Bearer ${seed.key}` };
  const raw: Target = { name: 'raw node:http hello world', url: seed.raw, expectStatus: 200 };
  const targets: (Target & { goal: number })[] = [
    { name: 'GET /patients/{id} → 200', url: `${seed.api}/api/platform/v1/patients/${seed.patientId}`, headers: auth, expectStatus: 200, goal: 0.15 },
    { name: 'GET /patients/{id} → 304', url: `${seed.api}/api/platform/v1/patients/${seed.patientId}`, headers: { ...auth, 'if-none-match': '"1"' }, expectStatus: 304, goal: 0.35 },
    { name: `GET /webhook-endpoints?limit=25 (${seed.endpoints} live)`, url: `${seed.api}/api/platform/v1/webhook-endpoints?limit=25`, headers: auth, expectStatus: 200, goal: 0.15 },
    {
      name: `GET /catalog/brands two-word search, limit 25 (${seed.brands} brands)`,
      url: `${seed.api}/api/sdk/v1/catalog/brands`,
      paths: TWO_WORD_QUERIES.map((q) => `/api/sdk/v1/catalog/brands?q=${encodeURIComponent(q)}&limit=25`),
      expectStatus: 200,
      goal: 0.25,
    },
    { name: 'GET /catalog/brands/{id}', url: `${seed.api}/api/sdk/v1/catalog/brands/${seed.lookupBrandId}`, expectStatus: 200, goal: 0.5 },
    { name: 'GET /catalog/brands/{id}/logo → 307', url: `${seed.api}/api/sdk/v1/catalog/brands/${seed.logoBrandId}/logo?size=128`, expectStatus: 307, goal: 0.5 },
  ];

  console.log(`platform benchmark: ${ROUNDS} interleaved rounds × ${SECONDS} s per target, ${CONNECTIONS} connections, node ${process.version}`);
  await measure(raw, 1, CONNECTIONS); // warm-up
  for (const target of targets) await measure(target, 1, CONNECTIONS);

  // Each round measures raw next to every target, so a ratio compares runs seconds apart; the median over
  // rounds discards a round disturbed by something else on the machine.
  const rounds: Map<string, Measurement>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const measured = new Map<string, Measurement>();
    for (const target of [raw, ...targets]) measured.set(target.name, await measure(target, SECONDS, CONNECTIONS));
    rounds.push(measured);
  }
  stop();

  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  const rawRps = rounds.map((r) => r.get(raw.name)!.requestsPerSecond);
  const rows = [
    { target: raw.name, 'req/s': Math.round(median(rawRps)), ratio: '1.00', goal: '', verdict: '', errors: rounds.reduce((s, r) => s + r.get(raw.name)!.errors, 0) },
    ...targets.map((t) => {
      const rps = rounds.map((r) => r.get(t.name)!.requestsPerSecond);
      const ratio = median(rounds.map((r, i) => r.get(t.name)!.requestsPerSecond / rawRps[i]!));
      const errors = rounds.reduce((s, r) => s + r.get(t.name)!.errors, 0);
      return { target: t.name, 'req/s': Math.round(median(rps)), ratio: ratio.toFixed(2), goal: `≥ ${t.goal}`, verdict: ratio >= t.goal && errors === 0 ? 'met' : 'MISSED', errors };
    }),
  ];
  console.table(rows);
  console.log('ratio = median over rounds of (target req/s ÷ raw req/s in the same round)');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
