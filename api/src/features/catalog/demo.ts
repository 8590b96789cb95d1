// The demo catalog a fresh clone serves (examples/demo: fictional brands, inline logos), published through
// the operator's own pipeline by running its command line, `portico-operator import`, against the database
// and object storage this process uses: the API never loads the operator's code.
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Logger } from 'pino';
import { catalogKey } from '#core/catalog/snapshots.js';
import { repoRoot } from '#core/infra/repo-root.js';
import { childEnvironment, type Config } from '../../config.js';

/** The operator's pipeline needs a few seconds for the demo; past this something is wrong. */
const DEMO_IMPORT_TIMEOUT_MS = 120_000;

export interface DemoReport {
  brandCount: number;
  logos: { rendered: number };
  snapshot: { id: string };
}

export async function publishDemoCatalog(config: Config, mongodbUri: string, logger: Logger): Promise<DemoReport> {
  const root = repoRoot();
  const args = [
    path.join(root, 'bin', 'portico-operator.js'),
    'import',
    '-f',
    path.join(root, 'examples', 'demo', 'brandcatalog.yaml'),
    '--catalog',
    catalogKey(config.catalog),
    '--json',
  ];
  const env = childEnvironment({
    MONGODB_URI: mongodbUri,
    PORTICO_OBJECT_STORAGE: config.objectStorage,
    LOG_LEVEL: config.logLevel,
    ...(config.redisUrl && { REDIS_URL: config.redisUrl }),
  });
  const child = spawn(process.execPath, args, {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: DEMO_IMPORT_TIMEOUT_MS,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (exitCode) => resolve(exitCode));
  });
  if (code !== 0)
    throw new Error(
      `publishing the demo catalog failed (portico-operator import exited with ${code}): ${stderr.trim()}`,
    );
  if (stderr.trim()) logger.debug({ output: stderr.trim() }, 'portico-operator import');
  return JSON.parse(stdout) as DemoReport;
}
