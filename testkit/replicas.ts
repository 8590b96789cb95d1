// API replicas as real processes (`node dist/api/src/main.js`, what the image runs), for the fault tests: each
// on a loopback port of its own that it keeps across a kill and restart, sharing one database and one Redis,
// with the production deadlines. Their error log lines are kept for the tests' failure messages.
import path from 'node:path';
import os from 'node:os';
import { repoRoot } from '#core/infra/repo-root.js';
import { ADMIN_TOKEN } from './api.js';
import { startGuarded, type GuardedProcess } from './pausable.js';
import { freePort } from './machine.js';
import { until } from './until.js';

export interface Replica extends GuardedProcess {
  readonly name: string;
  readonly url: string;
  /** Log lines at error level or above (newest last, at most 50). */
  readonly errors: string[];
  /** Log lines at warning level (newest last, at most 50): dependency failures. */
  readonly warnings: string[];
}

export interface ReplicaOptions {
  name: string;
  /** mongodb://host:port/ */
  mongodbServer: string;
  database: string;
  redisUrl: string;
  env?: Record<string, string>;
}

/** Whether `url` answers /readyz with 200 within 2 s. */
export const isReady = async (url: string) =>
  (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
    (r) => r.status,
    () => 0,
  )) === 200;

/** Resolves once the replica is ready (30 s at most). */
export async function whenReady(replica: Replica): Promise<void> {
  await until(`${replica.name} to be ready`, () => isReady(replica.url), {
    timeoutMs: 30_000,
    intervalMs: 200,
    diagnose: () => replica.errors.slice(-5).join('\n'),
  });
}

export async function startReplica({
  name,
  mongodbServer,
  database,
  redisUrl,
  env = {},
}: ReplicaOptions): Promise<Replica> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const errors: string[] = [];
  const warnings: string[] = [];
  const process_ = await startGuarded({
    command: process.execPath,
    args: ['--enable-source-maps', path.join(repoRoot(), 'dist/api/src/main.js')],
    env: {
      PATH: process.env.PATH,
      HOME: os.tmpdir(),
      HOST: '127.0.0.1',
      PORT: String(port),
      MONGODB_URI: `${mongodbServer}${database}`,
      REDIS_URL: redisUrl,
      PORTICO_ADMIN_TOKEN: ADMIN_TOKEN,
      PORTICO_CURSOR_SECRET: 'fault-test-cursor-secret-0123456789abcdef',
      PORTICO_DEMO_CATALOG: 'false',
      PORTICO_OBJECT_STORAGE: `file://${path.join(os.tmpdir(), `portico-fault-objects-${database}`)}`,
      LOG_LEVEL: 'warn',
      ...env,
    },
    ready: () => isReady(url),
    onLine: (line) => {
      const kept = /"level":(50|60)/.test(line) ? errors : /"level":40/.test(line) ? warnings : undefined;
      kept?.push(line.slice(0, 2_000));
      if (kept && kept.length > 50) kept.shift();
    },
  });
  return Object.assign(process_, { name, url, errors, warnings });
}
