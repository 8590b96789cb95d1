// Webhook delivery benchmark (`node dist/bench/webhooks.js`, part of `npm run bench`). The API with its
// dispatcher runs in a child process (pinned to one core when there are two); receivers and the driver run
// here. Two measures, against the goals of the delivery issue:
// - throughput: 1,000 events committed through the outbox, each to 10 receivers (10,000 deliveries), from the
//   first commit to the last arrival; plus the API process's CPU per delivery;
// - latency: events created by POST /patients one at a time, from the response's arrival here to the event's
//   arrival at each of 3 healthy receivers, while a 4th endpoint of the same account hangs on every request.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../api/src/config.js';
import { startEmbeddedDatabase } from '#core/infra/devdb.js';
import { Receiver } from '../testkit/receivers.js';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 1000);
const RECEIVERS = 10;
const LATENCY_EVENTS = Number(process.env.BENCH_WEBHOOK_LATENCY_EVENTS ?? 300);
const GOALS = { deliveriesPerSecond: 300, p50Ms: 50, p99Ms: 500 };

function startServer(): Promise<{ api: string; child: ChildProcess }> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const pinned = availableParallelism() >= 2 && spawnSync('taskset', ['--version']).status === 0;
  const [command, ...args] = [
    ...(pinned ? ['taskset', '-c', String(availableParallelism() - 1)] : []),
    process.execPath,
    '--enable-source-maps',
    path.join(here, 'webhook-server.js'),
  ];
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`webhook benchmark server exited with ${code}`)));
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve({ ...(JSON.parse(out.slice(0, out.indexOf('\n'))) as { api: string }), child });
    });
  });
}

const ask = <T>(child: ChildProcess, message: unknown, answer: (reply: unknown) => boolean): Promise<T> =>
  new Promise((resolve) => {
    const listener = (reply: unknown) => {
      if (!answer(reply)) return;
      child.off('message', listener);
      resolve(reply as T);
    };
    child.on('message', listener);
    child.send(message as object);
  });
const cpuMs = async (child: ChildProcess) => {
  const usage = await ask<NodeJS.CpuUsage>(child, 'cpu', (r) => typeof r === 'object' && r !== null && 'user' in r);
  return (usage.user + usage.system) / 1000;
};

async function call(api: string, method: string, url: string, key: string, body?: unknown): Promise<any> {
  const res = await fetch(`${api}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${url} answered ${res.status}: ${await res.text()}`);
  return res.json();
}

const tenant = (child: ChildProcess, scopes: string[]) =>
  ask<{ accountId: string; key: string }>(
    child,
    { tenant: scopes },
    (r) => typeof r === 'object' && r !== null && 'key' in r,
  );

/** CPU ms the embedded database's process has used (Linux), or NaN where it cannot be read. */
function databaseCpuMs(port: number): number {
  const pid = spawnSync('pgrep', ['-f', `portico-devdb -listen 127.0.0.1:${port}`])
    .stdout?.toString()
    .trim()
    .split('\n')[0];
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in USER_HZ (100)
  } catch {
    return Number.NaN;
  }
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function main(): Promise<void> {
  // The database starts here, before this process leaves the API's core: it runs beside the receivers, as a
  // database would run on its own machine, and the API process (which finds it running) has its core alone.
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' });
  if (availableParallelism() >= 2 && spawnSync('taskset', ['--version']).status === 0)
    spawnSync('taskset', ['-cp', `0-${availableParallelism() - 2}`, String(process.pid)]);
  const database = await startEmbeddedDatabase({
    port: config.devdbPort,
    dataDir: config.dataDir,
    cacheDir: config.cacheDir,
  });
  const { api, child } = await startServer();
  const receivers = await Promise.all(Array.from({ length: RECEIVERS + 1 }, () => Receiver.start()));
  try {
    console.log(
      `webhook delivery: node ${process.version}, ${cpus().length} cores (API on one; database, receivers and driver on the rest), load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}, embedded database`,
    );

    // Throughput.
    const bulk = await tenant(child, ['webhook:write']);
    for (const receiver of receivers.slice(0, RECEIVERS))
      await call(api, 'POST', '/api/platform/v1/webhook-endpoints', bulk.key, {
        url: receiver.url('/bulk'),
        eventTypes: ['patient.created'],
      });
    const cpuBefore = await cpuMs(child);
    const databaseBefore = databaseCpuMs(config.devdbPort);
    const started = performance.now();
    await ask(
      child,
      { emit: EVENTS, accountId: bulk.accountId },
      (r) => typeof r === 'object' && r !== null && 'emitted' in r,
    );
    const committed = performance.now() - started;
    await Promise.all(receivers.slice(0, RECEIVERS).map((r) => r.waitAt('/bulk', EVENTS, 600_000)));
    const seconds = (performance.now() - started) / 1000;
    const cpuPerDelivery = ((await cpuMs(child)) - cpuBefore) / (EVENTS * RECEIVERS);
    const databasePerDelivery = (databaseCpuMs(config.devdbPort) - databaseBefore) / (EVENTS * RECEIVERS);
    const { commands } = await ask<{ commands: Record<string, { count: number; ms: number }> }>(
      child,
      'commands',
      (r) => typeof r === 'object' && r !== null && 'commands' in r,
    );
    const perDelivery = (n: number) => Number((n / (EVENTS * RECEIVERS)).toFixed(3));
    console.table(
      Object.entries(commands)
        .sort((a, b) => b[1].ms - a[1].ms)
        .slice(0, 12)
        .map(([command, { count, ms }]) => ({
          command,
          'per delivery': perDelivery(count),
          'ms per delivery': perDelivery(ms),
        })),
    );
    const duplicates = receivers
      .slice(0, RECEIVERS)
      .reduce(
        (sum, r) => sum + (r.at('/bulk').length - new Set(r.at('/bulk').map((d) => d.headers['webhook-id'])).size),
        0,
      );
    const rate = (EVENTS * RECEIVERS) / seconds;

    // Latency, with a hanging endpoint beside the healthy ones.
    const latency = await tenant(child, ['patient:write', 'webhook:write']);
    const healthy = receivers.slice(0, 3);
    const hanging = receivers[RECEIVERS]!;
    hanging.answerWith({ status: 200, hang: true });
    for (const receiver of [...healthy, hanging])
      await call(api, 'POST', '/api/platform/v1/webhook-endpoints', latency.key, {
        url: receiver.url('/latency'),
        eventTypes: ['patient.created'],
      });
    const samples: number[] = [];
    for (let i = 0; i < LATENCY_EVENTS; i++) {
      const res = await fetch(`${api}/api/platform/v1/patients`, {
        method: 'POST',
        headers: { authorization: `Bearer ${latency.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ givenName: 'Bench', familyName: `Latency${i}` }),
      });
      const answeredAt = Date.now();
      await res.text();
      await Promise.all(healthy.map((r) => r.waitAt('/latency', i + 1, 30_000)));
      for (const receiver of healthy) samples.push(receiver.at('/latency')[i]!.receivedAt - answeredAt);
    }
    const sorted = samples.sort((a, b) => a - b);
    const p50 = percentile(sorted, 50);
    const p99 = percentile(sorted, 99);

    console.table([
      {
        measure: `throughput: ${EVENTS} events × ${RECEIVERS} receivers, deliveries/s`,
        value: Math.round(rate),
        goal: `≥ ${GOALS.deliveriesPerSecond}`,
        verdict: rate >= GOALS.deliveriesPerSecond && duplicates === 0 ? 'met' : 'MISSED',
      },
      {
        measure: '  of which committing the events, s',
        value: Number((committed / 1000).toFixed(2)),
        goal: '',
        verdict: '',
      },
      {
        measure: '  API process CPU per delivery, ms',
        value: Number(cpuPerDelivery.toFixed(3)),
        goal: '',
        verdict: '',
      },
      {
        measure: '  database CPU per delivery, ms',
        value: Number(databasePerDelivery.toFixed(3)),
        goal: '',
        verdict: '',
      },
      { measure: '  duplicate deliveries', value: duplicates, goal: '0', verdict: duplicates === 0 ? 'met' : 'MISSED' },
      {
        measure: `latency response → arrival, p50 ms (${samples.length} samples, one endpoint hanging)`,
        value: p50,
        goal: `≤ ${GOALS.p50Ms}`,
        verdict: p50 <= GOALS.p50Ms ? 'met' : 'MISSED',
      },
      {
        measure: 'latency response → arrival, p99 ms',
        value: p99,
        goal: `≤ ${GOALS.p99Ms}`,
        verdict: p99 <= GOALS.p99Ms ? 'met' : 'MISSED',
      },
      {
        measure: '  attempts open at the hanging endpoint (cap 10)',
        value: hanging.open,
        goal: '≤ 10',
        verdict: hanging.maxOpen <= 10 ? 'met' : 'MISSED',
      },
    ]);
  } finally {
    for (const receiver of receivers) await receiver.close();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await database.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
