// The embedded MongoDB-compatible database: FerretDB (SQLite backend) wrapped by tools/devdb, built with
// `go build` into .tools/bin when missing or out of date, started on demand and shared: whichever process
// needs it first starts it, later ones reuse the running server, and the starter stops it when it exits.
import { spawn, execFile, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { repoRoot } from './repo-root.js';

const run = promisify(execFile);

export interface EmbeddedDatabase {
  uri: string;
  /** True when this process started the server (and so stops it). */
  owned: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedDatabaseOptions {
  port: number;
  dataDir: string;
  log?: (message: string) => void;
}

export async function startEmbeddedDatabase(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  const uri = `mongodb://127.0.0.1:${options.port}/`;
  const log = options.log ?? (() => {});
  if (await answers(uri)) {
    log(`using the embedded database already running at ${uri}`);
    return { uri, owned: false, stop: async () => {} };
  }
  const binary = await buildDevDb(log);
  const dir = path.join(options.dataDir, 'devdb');
  await mkdir(dir, { recursive: true });
  const child = spawn(binary, ['-listen', `127.0.0.1:${options.port}`, '-dir', dir, '-exit-on-stdin-eof'], { stdio: 'pipe' });
  try {
    await waitForReady(child);
  } catch (error) {
    // Another process may have won the race for the port: use its server.
    if (await answers(uri)) return { uri, owned: false, stop: async () => {} };
    throw error;
  }
  log(`started the embedded database (FerretDB, SQLite) at ${uri} with data in ${dir}`);
  return { uri, owned: true, stop: () => stopChild(child) };
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

/** Builds tools/devdb unless the binary matches the current sources; returns the binary's path. */
export async function buildDevDb(log: (message: string) => void = () => {}): Promise<string> {
  const root = repoRoot();
  const source = path.join(root, 'tools', 'devdb');
  const binary = path.join(root, '.tools', 'bin', 'portico-devdb');
  const stampFile = `${binary}.stamp`;
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(readFileSync(path.join(source, file)));
  const stamp = hash.digest('hex');
  if (existsSync(binary) && existsSync(stampFile) && (await readFile(stampFile, 'utf8')) === stamp) return binary;

  log('building the embedded database (go build tools/devdb; the first build downloads FerretDB and takes a minute)…');
  await mkdir(path.dirname(binary), { recursive: true });
  const temporary = `${binary}.${process.pid}.tmp`;
  try {
    await run('go', ['build', '-trimpath', '-o', temporary, '.'], { cwd: source, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const detail = (error as { stderr?: string; code?: string }).code === 'ENOENT' ? 'Go is not installed (https://go.dev/dl)' : String((error as { stderr?: string }).stderr ?? error);
    throw new Error(`cannot build the embedded database: ${detail}. Set MONGODB_URI to use an existing MongoDB instead.`);
  }
  await rename(temporary, binary);
  await writeFile(stampFile, stamp);
  return binary;
}

function waitForReady(child: ChildProcessWithoutNullStreams): Promise<void> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => fail(new Error('the embedded database did not start within 30 s')), 30_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready ')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => fail(new Error(`the embedded database exited with code ${code}: ${stderr.trim()}`)));
  });
}

function stopChild(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
