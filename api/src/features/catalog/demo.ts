// The demo catalog a fresh clone serves (examples/demo: fictional brands, inline logos), published through
// the operator's own pipeline by running its command line, `portico-operator import`, against the database
// and object storage this process uses: the API never loads the operator's code.
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { catalogKey, type SnapshotStore } from '#core/catalog/snapshots.js';
import { repoRoot } from '#core/infra/repo-root.js';
import { childEnvironment, type Config } from '../../config.js';

/** The operator's pipeline needs a few seconds for the demo; past this something is wrong. */
const DEMO_IMPORT_TIMEOUT_MS = 120_000;

export interface DemoReport {
  brandCount: number;
  logos: { rendered: number };
  snapshot: { id: string };
}

/** The sandbox EHR's port the demo's sandbox brands name (examples/demo/sandbox-brands.json). */
export const DEMO_SANDBOX_PORT = 8095;

/**
 * Whether the demo catalog's sandbox brands would lead elsewhere than the sandbox EHR now listens: it was published
 * for another PORTICO_SANDBOX_PORT (then it is published again, following the port).
 */
export async function demoSandboxMoved(
  snapshots: Pick<SnapshotStore, 'active' | 'load'>,
  config: Config,
): Promise<boolean> {
  if (!config.smart.sandbox) return false;
  const active = await snapshots.active(config.catalog);
  const snapshot = active && (await snapshots.load(active.snapshotId));
  const sandboxBrands = (snapshot?.brands ?? []).filter((brand) =>
    /^http:\/\/127\.0\.0\.1:\d+\/fhir\/sandbox-/.test(brand.fhirBaseUrl),
  );
  return (
    sandboxBrands.length > 0 && sandboxBrands.every((brand) => !brand.fhirBaseUrl.startsWith(sandboxOrigin(config)))
  );
}

const sandboxOrigin = (config: Config) => `http://127.0.0.1:${config.smart.sandboxPort}/`;

export async function publishDemoCatalog(config: Config, mongodbUri: string, logger: Logger): Promise<DemoReport> {
  const root = repoRoot();
  // The demo as it is, or (the sandbox on another port) a copy whose sandbox brands name that port.
  let folder = path.join(root, 'examples', 'demo');
  if (config.smart.sandboxPort !== DEMO_SANDBOX_PORT) {
    const copy = await mkdtemp(path.join(tmpdir(), 'portico-demo-'));
    await cp(folder, copy, { recursive: true });
    const brands = path.join(copy, 'sandbox-brands.json');
    const text = await readFile(brands, 'utf8');
    await writeFile(
      brands,
      text.replaceAll(`127.0.0.1:${DEMO_SANDBOX_PORT}/`, `127.0.0.1:${config.smart.sandboxPort}/`),
    );
    folder = copy;
  }
  const args = [
    path.join(root, 'bin', 'portico-operator.js'),
    'import',
    '-f',
    path.join(folder, 'brandcatalog.yaml'),
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
  if (folder !== path.join(root, 'examples', 'demo')) await rm(folder, { recursive: true, force: true });
  if (code !== 0)
    throw new Error(
      `publishing the demo catalog failed (portico-operator import exited with ${code}): ${stderr.trim()}`,
    );
  if (stderr.trim()) logger.debug({ output: stderr.trim() }, 'portico-operator import');
  return JSON.parse(stdout) as DemoReport;
}
