// The embedded MongoDB-compatible database: FerretDB (SQLite backend) wrapped by tools/devdb, built with `go build`
// into the per-machine tool cache when missing (./go-tool.ts), started on demand and shared: whichever process needs it
// first starts it, later ones reuse the running server, and the starter stops it when it exits.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { buildGoTool, startGoTool, stopChild, type GoTool } from './go-tool.js';

const DEVDB: GoTool = {
  source: 'devdb',
  binary: 'portico-devdb',
  label: 'the embedded database',
  buildNote: 'the first build downloads FerretDB and takes a minute',
  fallback: 'Set MONGODB_URI to use an existing MongoDB instead.',
};

export interface EmbeddedDatabase {
  uri: string;
  /** True when this process started the server (and so stops it). */
  owned: boolean;
  /** The server's process id when this process started it (benchmarks charge its CPU time to requests). */
  pid?: number;
  stop(): Promise<void>;
}

export interface EmbeddedDatabaseOptions {
  port: number;
  dataDir: string;
  /** The tool cache the binary is built into (CoreConfig.cacheDir). */
  cacheDir: string;
  log?: (message: string) => void;
  /**
   * false: reach a running server only, and refuse (DatabaseNotRunningError) rather than start one: for a command
   * that expects the API's database, where a new empty one (and a second server on the same files) would be wrong.
   */
  start?: boolean;
}

/** No embedded database answers where one was expected (EmbeddedDatabaseOptions.start false). */
export class DatabaseNotRunningError extends Error {
  override readonly name = 'DatabaseNotRunningError';
}

export async function startEmbeddedDatabase(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  const uri = `mongodb://127.0.0.1:${options.port}/`;
  const log = options.log ?? (() => {});
  if (await answers(uri)) {
    log(`using the embedded database already running at ${uri}`);
    return { uri, owned: false, stop: async () => {} };
  }
  const dir = path.join(options.dataDir, 'devdb');
  // A server busy with its first start (the API publishing its catalog) may miss one short ping: ask a few times.
  if (options.start === false && (await answersWithin(uri, NOT_RUNNING_PATIENCE_MS)))
    return { uri, owned: false, stop: async () => {} };
  if (options.start === false)
    throw new DatabaseNotRunningError(
      `no embedded database answers at ${uri} (PORTICO_DEVDB_PORT=${options.port}), and this command does not start a new one: ` +
        `start the API first (npm start), or set PORTICO_DEVDB_PORT or MONGODB_URI to the database it uses. ` +
        `(--start-database starts one here, with data in ${dir}.)`,
    );
  const binary = await buildDevDb(log, options.cacheDir);
  await mkdir(dir, { recursive: true });
  const args = ['-listen', `127.0.0.1:${options.port}`, '-dir', dir, '-exit-on-stdin-eof'];
  const started = await startGoTool(binary, args, DEVDB.label).catch(async (error: unknown) => {
    // Another process may have won the race for the port: use its server.
    if (await answers(uri)) return undefined;
    throw error;
  });
  if (!started) return { uri, owned: false, stop: async () => {} };
  log(`started the embedded database (FerretDB, SQLite) at ${uri} with data in ${dir}`);
  return { uri, owned: true, pid: started.child.pid, stop: () => stopChild(started.child) };
}

/** How long a command that must not start a database keeps asking the one it expects. */
const NOT_RUNNING_PATIENCE_MS = 5_000;

async function answersWithin(uri: string, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await answers(uri)) return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return false;
}

async function answers(uri: string): Promise<boolean> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 400, connectTimeoutMS: 400 });
  try {
    await client.db('admin').command({ ping: 1 });
    return true;
  } catch {
    return false;
  } finally {
    await client.close().catch(() => {});
  }
}

/** Builds tools/devdb unless the tool cache (`cacheDir`, from the caller's configuration) holds it for the current
 * sources; returns the binary's path. */
export function buildDevDb(log: (message: string) => void, cacheDir: string): Promise<string> {
  return buildGoTool(DEVDB, cacheDir, log);
}
