// Dependencies of a fault test's own, which it pauses (SIGSTOP) and resumes (SIGCONT): a redis-server and the
// embedded database (FerretDB) on free loopback ports and in a temporary directory, never shared with other
// tests. Each runs under a guard shell that resumes and stops it when this process goes away, even without
// notice, so a paused server is never left behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildDevDb } from '../../core/src/infra/devdb.js';
import { freePort } from './services.js';

/**
 * Runs "$@" with stdin from /dev/null and prints its pid; when the stdin it was given closes, resumes and
 * stops it; exits with its status.
 */
const PAUSABLE_GUARD =
  'exec 3<&0; "$@" </dev/null 3<&- & pid=$!; echo "guarded $pid"; (cat >/dev/null; kill $pid 2>/dev/null; kill -CONT $pid 2>/dev/null) <&3 & exec 3<&-; wait $pid';

export interface PausableServer {
  /** redis://… or mongodb://host:port/ */
  readonly url: string;
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** Runs `body` with `server` paused and resumes it however `body` ends. */
export async function whilePaused<T>(server: PausableServer, body: () => Promise<T>): Promise<T> {
  server.pause();
  try {
    return await body();
  } finally {
    server.resume();
  }
}

export async function startPausableRedis(): Promise<PausableServer> {
  const port = await freePort();
  return start('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], /Ready to accept connections/, `redis://127.0.0.1:${port}`);
}

export async function startPausableDatabase(): Promise<PausableServer> {
  const [port, binary, dir] = await Promise.all([freePort(), buildDevDb(), mkdtemp(path.join(os.tmpdir(), 'portico-pausable-devdb-'))]);
  const server = await start(binary, ['-listen', `127.0.0.1:${port}`, '-dir', dir], /ready \S+/, `mongodb://127.0.0.1:${port}/`);
  return {
    ...server,
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function start(command: string, args: string[], ready: RegExp, url: string): Promise<PausableServer> {
  const guard = spawn('sh', ['-c', PAUSABLE_GUARD, 'pausable', command, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const pid = await new Promise<number>((resolve, reject) => {
    let output = '';
    let errors = '';
    const timer = setTimeout(() => fail(new Error(`${command} did not start within 30 s: ${errors}`)), 30_000);
    const exited = (code: number | null) => fail(new Error(`${command} exited with ${code}: ${errors}`));
    const collectErrors = (chunk: Buffer) => (errors = (errors + chunk.toString()).slice(-2000));
    const read = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
      const guarded = /guarded (\d+)/.exec(output);
      if (guarded && ready.test(output)) {
        settle();
        resolve(Number(guarded[1]));
      }
    };
    const settle = () => {
      clearTimeout(timer);
      guard.off('exit', exited);
      guard.stdout!.off('data', read);
      guard.stderr!.off('data', collectErrors);
    };
    const fail = (error: Error) => {
      settle();
      guard.stdin!.end();
      reject(error);
    };
    guard.once('exit', exited);
    guard.stderr!.on('data', collectErrors);
    guard.stdout!.on('data', read);
  });
  // Kept reading so that the pipes never fill and block the server.
  guard.stdout!.resume();
  guard.stderr!.resume();
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error; // already gone
    }
  };
  return {
    url,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    stop: () => stopGuard(guard, signal),
  };
}

function stopGuard(guard: ChildProcess, signal: (name: NodeJS.Signals) => void): Promise<void> {
  if (guard.exitCode !== null || guard.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const killer = setTimeout(() => signal('SIGKILL'), 10_000);
    guard.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    signal('SIGCONT');
    guard.stdin!.end(); // the guard stops the server, then exits
  });
}
