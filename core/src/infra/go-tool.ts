// Portico's small Go programs (tools/<name>: the embedded database, the test S3 server): built with
// `go build` into .tools/bin when missing or out of date, spawned, and awaited until they print `ready …`.
import { spawn, execFile, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './repo-root.js';

const run = promisify(execFile);

export interface GoTool {
  /** Folder under tools/ holding go.mod, go.sum and the sources. */
  source: string;
  /** File name of the binary in .tools/bin. */
  binary: string;
  /** What the tool is, for messages: "the embedded database". */
  label: string;
  /** Said while building: "the first build downloads FerretDB and takes a minute". */
  buildNote: string;
  /** Said when the build fails: what to do instead. */
  fallback: string;
}

/** Builds the tool unless the binary matches the current sources; returns the binary's path. */
export async function buildGoTool(tool: GoTool, log: (message: string) => void = () => {}): Promise<string> {
  const root = repoRoot();
  const source = path.join(root, 'tools', tool.source);
  const binary = path.join(root, '.tools', 'bin', tool.binary);
  const stampFile = `${binary}.stamp`;
  const stamp = sourceHash(source);
  if (existsSync(binary) && existsSync(stampFile) && (await readFile(stampFile, 'utf8')) === stamp) return binary;

  log(`building ${tool.label} (go build tools/${tool.source}; ${tool.buildNote})…`);
  await mkdir(path.dirname(binary), { recursive: true });
  // Built under a private name and renamed, so a concurrent build or a reader never sees half a binary.
  const temporary = `${binary}.${process.pid}.tmp`;
  try {
    // Go's own build cache (~/.cache/go-build) is deliberately shared: a fresh clone on the same machine
    // (CI's case) then links kube-apiserver in about a minute instead of compiling it for ten.
    await run('go', ['build', '-trimpath', '-o', temporary, '.'], { cwd: source, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const detail = (error as { stderr?: string; code?: string }).code === 'ENOENT' ? 'Go is not installed (https://go.dev/dl)' : String((error as { stderr?: string }).stderr ?? error);
    throw new Error(`cannot build ${tool.label}: ${detail}. ${tool.fallback}`);
  }
  await rename(temporary, binary);
  await writeFile(stampFile, stamp);
  return binary;
}

/** go.mod, go.sum, then every .go file by name: what `go build` reads. */
function sourceHash(source: string): string {
  const goFiles = readdirSync(source).filter((file) => file.endsWith('.go')).sort();
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', ...goFiles]) hash.update(readFileSync(path.join(source, file)));
  return hash.digest('hex');
}

/** Spawns the binary and resolves with the rest of its `ready <…>` line once it prints one. */
export async function startGoTool(binary: string, args: string[], label: string): Promise<{ child: ChildProcessWithoutNullStreams; ready: string }> {
  const child = spawn(binary, args, { stdio: 'pipe' });
  const ready = await waitForReady(child, label);
  return { child, ready };
}

function waitForReady(child: ChildProcessWithoutNullStreams, label: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    let stdout = '';
    let settled = false;
    const timer = setTimeout(() => fail(new Error(`${label} did not start within 30 s`)), 30_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(error);
    };
    child.once('error', (error) => fail(new Error(`cannot start ${label}: ${error.message}`)));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    // Kept reading after `ready` so the pipe never fills and blocks the tool.
    child.stdout.on('data', (chunk: Buffer) => {
      if (settled) return;
      stdout = (stdout + chunk.toString()).slice(-4000);
      const match = /ready (\S+)\r?\n/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        settled = true;
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => fail(new Error(`${label} exited with code ${code}: ${stderr.trim()}`)));
  });
}

export function stopChild(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
