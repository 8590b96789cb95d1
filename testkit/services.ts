// The real dependencies the tests run against, started once per test run: the embedded database
// (FerretDB, the same binary `npm start` uses) and a redis-server on a free loopback port. The S3 server
// (./s3.ts) and the Kubernetes API server (./kubernetes.ts) start with the first test that needs them and
// stop here with the rest, as does the container image unpacked for runc (./image.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '#core/infra/devdb.js';
import { repoRoot } from '#core/infra/repo-root.js';
import { removeUnpackedImage } from './image.js';
import { GUARD, stopTestKubernetes } from './kubernetes.js';
import { stopTestS3 } from './s3.js';
import { freePort, testToolCache } from './machine.js';

const NOT_STARTED =
  'test services are not started (a *.unit.test.ts file runs without them: name it *.test.ts to use them)';

let database: EmbeddedDatabase | undefined;
let redis: ChildProcess | undefined;
let redisUrl: string | undefined;

export async function startTestServices(): Promise<void> {
  database = await startEmbeddedDatabase({
    port: Number(process.env.PORTICO_DEVDB_PORT ?? 27017),
    dataDir: process.env.PORTICO_DATA_DIR ?? path.join(repoRoot(), '.data'),
    cacheDir: testToolCache(),
  });
  redisUrl = process.env.REDIS_URL ?? (await startRedis());
}

export async function stopTestServices(): Promise<void> {
  redis?.stdin?.end(); // the guard stops redis-server
  await stopTestS3();
  await stopTestKubernetes();
  await removeUnpackedImage();
  await database?.stop();
}

export function mongoUri(): string {
  if (!database) throw new Error(NOT_STARTED);
  return database.uri;
}

export function testRedisUrl(): string {
  if (!redisUrl) throw new Error(NOT_STARTED);
  return redisUrl;
}

async function startRedis(): Promise<string> {
  const port = await freePort();
  // Under the guard shell, redis-server dies with this process even when it is killed without notice.
  const child = spawn(
    'sh',
    [
      '-c',
      GUARD,
      'redis',
      'redis-server',
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('redis-server did not start within 10 s')), 10_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(
        new Error(
          code === 127
            ? 'redis-server is not installed: run `bash scripts/ensure-tools.sh` (Debian: apt-get install redis-server) or set REDIS_URL'
            : `redis-server exited with ${code}`,
        ),
      );
    });
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  redis = child;
  return `redis://127.0.0.1:${port}`;
}
