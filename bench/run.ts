// `npm run bench`: each API operation against a raw node:http hello-world served by the same process,
// interleaved (raw, op, op, …, raw, …) so drift on a shared machine hits both sides alike. Figures are
// ratios to raw; nothing here is asserted by the test suite.
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { measure, type Measurement, type Target } from './autocannon.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

interface Seed {
  raw: string;
  api: string;
  key: string;
  patientId: string;
  endpoints: number;
}

function startServer(): Promise<{ seed: Seed; stop: () => void }> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const child = fork(path.join(here, 'platform', 'server.js'), [], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], execArgv: ['--enable-source-maps'] });
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
  ];

  console.log(`platform benchmark: ${ROUNDS} interleaved rounds × ${SECONDS} s per target, ${CONNECTIONS} connections, node ${process.version}`);
  await measure(raw, 1, CONNECTIONS); // warm-up
  for (const target of targets) await measure(target, 1, CONNECTIONS);

  const results = new Map<string, Measurement[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of [raw, ...targets]) {
      const m = await measure(target, SECONDS, CONNECTIONS);
      results.set(target.name, [...(results.get(target.name) ?? []), m]);
    }
  }
  stop();

  const mean = (name: string) => {
    const ms = results.get(name)!;
    return { rps: ms.reduce((s, m) => s + m.requestsPerSecond, 0) / ms.length, p99: Math.max(...ms.map((m) => m.p99Ms)), errors: ms.reduce((s, m) => s + m.errors, 0) };
  };
  const baseline = mean(raw.name);
  const rows = [
    { target: raw.name, 'req/s': Math.round(baseline.rps), 'p99 ms': baseline.p99, ratio: '1.00', goal: '', verdict: '', errors: baseline.errors },
    ...targets.map((t) => {
      const m = mean(t.name);
      const ratio = m.rps / baseline.rps;
      return { target: t.name, 'req/s': Math.round(m.rps), 'p99 ms': m.p99, ratio: ratio.toFixed(2), goal: `≥ ${t.goal}`, verdict: ratio >= t.goal && m.errors === 0 ? 'met' : 'MISSED', errors: m.errors };
    }),
  ];
  console.table(rows);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
