// Portico's small Go programs (tools/<name>: the embedded database, the test S3 server, the test Kubernetes API
// server): built with `go build` into the per-machine tool cache (./tool-cache.ts) when missing, spawned, and
// awaited until they print `ready …`.
import { spawn, execFile, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './repo-root.js';
import { cacheKey, ensureCacheEntry } from './tool-cache.js';

const run = promisify(execFile);

export interface GoTool {
  /** Folder under tools/ holding go.mod, go.sum and the sources. */
  source: string;
  /** File name of the binary (and of its folder in the tool cache). */
  binary: string;
  /** What the tool is, for messages: "the embedded database". */
  label: string;
  /** Said while building: "the first build downloads FerretDB and takes a minute". */
  buildNote: string;
  /** Said when the build fails: what to do instead. */
  fallback: string;
}

/**
 * Builds the tool into the tool cache under `cacheDir` unless it is there for the current sources, Go release and
 * platform (another clone of this machine may have built it); returns the binary's path.
 */
export async function buildGoTool(
  tool: GoTool,
  cacheDir: string,
  log: (message: string) => void = () => {},
): Promise<string> {
  const source = path.join(repoRoot(), 'tools', tool.source);
  const fail = (error: unknown): never => {
    const detail =
      (error as { code?: string }).code === 'ENOENT'
        ? 'Go is not installed (https://go.dev/dl)'
        : String((error as { stderr?: string }).stderr ?? error);
    throw new Error(`cannot build ${tool.label}: ${detail}. ${tool.fallback}`);
  };
  const builtFrom = await goBuiltFrom(source).catch(fail);
  const entry = path.join(cacheDir, tool.binary, cacheKey(builtFrom));
  return ensureCacheEntry(entry, tool.binary, async (temporary) => {
    log(`building ${tool.label} (go build tools/${tool.source}; ${tool.buildNote}) into ${entry}…`);
    // Go's own build cache (~/.cache/go-build) is shared too: a changed tools/<name> or a new Go release then
    // links kube-apiserver in about a minute instead of compiling it for ten.
    await run('go', ['build', '-trimpath', '-o', path.join(temporary, tool.binary), '.'], {
      cwd: source,
      maxBuffer: 16 * 1024 * 1024,
    }).catch(fail);
    await writeFile(path.join(temporary, 'built-from'), builtFrom);
  });
}

/**
 * What decides the binary `go build -trimpath` makes from a folder under tools/, which its cache key hashes
 * (scripts/lib/tool-cache.sh's go_built_from writes the same text): the Go release that builds it (asked in the
 * folder, so a go.mod toolchain line counts), the target platform, cgo (and so the libc it needs) and GOFLAGS;
 * then go.mod, go.sum and every .go file by hash and name, all that `go build` reads there (go.sum fixes the
 * dependencies).
 */
export async function goBuiltFrom(source: string): Promise<string> {
  const { stdout: goEnv } = await run('go', ['env', 'GOVERSION', 'GOOS', 'GOARCH', 'CGO_ENABLED', 'GOFLAGS'], {
    cwd: source,
  });
  const goFiles = readdirSync(source)
    .filter((file) => file.endsWith('.go'))
    .sort();
  const files = ['go.mod', 'go.sum', ...goFiles].map(
    (file) =>
      `${createHash('sha256')
        .update(readFileSync(path.join(source, file)))
        .digest('hex')}  ${file}\n`,
  );
  return `go build -trimpath\n${goEnv}${files.join('')}`;
}

/** Spawns the binary and resolves with the rest of its `ready <…>` line once it prints one. */
export async function startGoTool(
  binary: string,
  args: string[],
  label: string,
): Promise<{ child: ChildProcessWithoutNullStreams; ready: string }> {
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
