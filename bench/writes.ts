// Write throughput benchmark (`node dist/bench/writes.js`, part of `npm run bench`): what the fault suite's load is
// made of, measured instead of asserted. Two API replicas as real processes (`node dist/api/src/main.js`, production
// deadlines), Redis and the embedded database, all on loopback as the fault suite runs them; BENCH_WRITE_CLIENTS
// clients (16) send idempotent writes back to back in the suite's mix (patient creations, versioned deletions,
// versioned webhook-endpoint updates: testkit/write-traffic.ts). Each round reports writes a second, latency, and CPU
// milliseconds per write by process, which a busy machine disturbs less than throughput; BENCH_WRITE_ROUNDS rounds (3)
// of BENCH_WRITE_SECONDS (10) after a warm-up.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { ADMIN_TOKEN } from '../testkit/api.js';
import { startPausableDatabase, startPausableRedis } from '../testkit/pausable.js';
import { startReplica, whenReady, type Replica } from '../testkit/replicas.js';
import { WEBHOOKS } from '../testkit/webhooks.js';
import { WriteTraffic, type PatchableEndpoint } from '../testkit/write-traffic.js';

const ROUNDS = Number(process.env.BENCH_WRITE_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_WRITE_SECONDS ?? 10);
const CLIENTS = Number(process.env.BENCH_WRITE_CLIENTS ?? 16);

/** CPU time (user + system) of a process so far, in milliseconds (Linux). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // USER_HZ = 100
}

async function main(): Promise<void> {
  const [database, redis] = await Promise.all([startPausableDatabase(), startPausableRedis()]);
  const name = `bench_writes_${randomUUID().slice(0, 8)}`;
  const replicas: Replica[] = [];
  try {
    for (const replica of ['replica-1', 'replica-2'])
      replicas.push(
        await startReplica({
          name: replica,
          mongodbServer: database.url,
          database: name,
          redisUrl: redis.url,
          env: { PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true' },
        }),
      );
    await Promise.all(replicas.map(whenReady));
    const call = async (path: string, key: string, body: unknown) =>
      (await (
        await fetch(replicas[0]!.url + path, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as Record<string, string>;
    const account = (await call('/api/admin/v1/customer-accounts', ADMIN_TOKEN, { name: 'Write benchmark' })).id!;
    const credential = (
      await call(`/api/admin/v1/customer-accounts/${account}/api-keys`, ADMIN_TOKEN, {
        scopes: ['patient:read', 'patient:write', 'webhook:read', 'webhook:write'],
      })
    ).key!;
    const endpoints: PatchableEndpoint[] = [];
    for (let i = 0; i < 40; i++) {
      const created = await call(WEBHOOKS, credential, {
        url: `http://127.0.0.1:65000/bench-${i}`,
        eventTypes: ['app_user.tombstoned'],
      });
      endpoints.push({ id: created.id!, version: created._version });
    }
    const traffic = () =>
      new WriteTraffic({
        replicas,
        credential,
        rate: 1,
        maxInFlight: 1,
        attemptTimeoutMs: 30_000,
        giveUpMs: 60_000,
        endpoints,
      });
    await traffic().closedLoop(CLIENTS, 3_000); // warm-up
    console.log(
      `\nWrites: two API replicas, Redis, the embedded database; ${CLIENTS} clients back to back; creations, versioned deletions and updates (60/20/20)`,
    );
    console.log(
      '| round | writes/s | p50 | p99 | API CPU/write (both replicas) | database CPU/write | Redis CPU/write | load average |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (let round = 1; round <= ROUNDS; round++) {
      // The patches' versions, as the last round left them.
      for (const endpoint of endpoints) endpoint.version = undefined;
      const fresh = (await Promise.all(
        endpoints.map(async (e) =>
          (
            await fetch(`${replicas[0]!.url}${WEBHOOKS}/${e.id}`, {
              headers: { authorization: `Bearer ${credential}` },
            })
          ).json(),
        ),
      )) as { id: string; _version: string }[];
      for (const doc of fresh) endpoints.find((e) => e.id === doc.id)!.version = doc._version;
      const pids = [...replicas.map((r) => r.pid), database.pid, redis.pid];
      const before = pids.map(cpuMs);
      const run = traffic();
      const rate = await run.closedLoop(CLIENTS, SECONDS * 1000);
      const spent = pids.map((pid, i) => cpuMs(pid) - before[i]!);
      const done = rate * SECONDS;
      const latencies = run.attempts.map((a) => a.end - a.start).sort((a, b) => a - b);
      const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
      const per = (ms: number) => `${(ms / done).toFixed(1)} ms`;
      console.log(
        `| ${round} | ${rate.toFixed(1)} | ${at(0.5)} ms | ${at(0.99)} ms | ${per(spent[0]! + spent[1]!)} | ${per(spent[2]!)} | ${per(spent[3]!)} | ${loadavg()[0]!.toFixed(1)} |`,
      );
    }
  } finally {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await Promise.all([database.stop(), redis.stop()]);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
