// Processes of a fault test's own, which it pauses (SIGSTOP), resumes (SIGCONT), kills (SIGKILL) and starts
// again: a redis-server and the embedded database (FerretDB) on free loopback ports and in a temporary
// directory, never shared with other tests, and API replicas (testkit/replicas.ts). Each runs under a
// guard shell that resumes and stops it when this process goes away, even without notice, so a paused or
// orphaned process is never left behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildDevDb } from '#core/infra/devdb.js';
import { freePort, testToolCache } from './machine.js';

/**
 * Runs "$@" with stdin from /dev/null and prints its pid; when the stdin it was given closes, resumes and
 * stops it; exits with its status.
 */
const PAUSABLE_GUARD =
  'exec 3<&0; "$@" </dev/null 3<&- & pid=$!; echo "guarded $pid"; (cat >/dev/null; kill $pid 2>/dev/null; kill -CONT $pid 2>/dev/null) <&3 & exec 3<&-; wait $pid';

export interface GuardedProcess {
  /** SIGSTOP: the process stops answering, its connections stay open and the kernel keeps accepting. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** SIGKILL, resolved once it is gone. */
  kill(): Promise<void>;
  /** Starts it again as it was first started (after kill). */
  restart(): Promise<void>;
  /** Stops it for good (SIGTERM, SIGKILL after 10 s). */
  stop(): Promise<void>;
  /** The process's own id (not its guard's), as it is now: for reading its CPU time. */
  readonly pid: number;
}

export interface PausableServer extends GuardedProcess {
  /** redis://… or mongodb://host:port/ */
  readonly url: string;
}

/** Runs `body` with `server` paused and resumes it however `body` ends. */
export async function whilePaused<T>(server: GuardedProcess, body: () => Promise<T>): Promise<T> {
  server.pause();
  try {
    return await body();
  } finally {
    server.resume();
  }
}

export async function startPausableRedis(): Promise<PausableServer> {
  const port = await freePort();
  const server = await startGuarded({
    command: 'redis-server',
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    ready: /Ready to accept connections/,
  });
  return Object.assign(server, { url: `redis://127.0.0.1:${port}` });
}

export async function startPausableDatabase(): Promise<PausableServer> {
  const [port, binary, dir] = await Promise.all([
    freePort(),
    buildDevDb(() => {}, testToolCache()),
    mkdtemp(path.join(os.tmpdir(), 'portico-pausable-devdb-')),
  ]);
  const server = await startGuarded({
    command: binary,
    args: ['-listen', `127.0.0.1:${port}`, '-dir', dir],
    ready: /ready \S+/,
  });
  const stop = server.stop.bind(server);
  return Object.assign(server, {
    url: `mongodb://127.0.0.1:${port}/`,
    async stop() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  });
}

export interface GuardedCommand {
  command: string;
  args: string[];
  /** Printed (stdout or stderr) once it serves, or a probe that answers true once it does. */
  ready: RegExp | (() => Promise<boolean>);
  env?: NodeJS.ProcessEnv;
  /** Every line it prints (it is kept read either way, so its pipes never fill). */
  onLine?: (line: string) => void;
}

/** Starts `command` under the guard and resolves once it printed `ready`. */
export async function startGuarded(command: GuardedCommand): Promise<GuardedProcess> {
  let current = await launch(command);
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(current.pid, name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error; // already gone
    }
  };
  return {
    get pid() {
      return current.pid;
    },
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    async kill() {
      const exited = exit(current.guard);
      signal('SIGKILL');
      await exited;
      current.guard.stdin!.end(); // its watcher goes too
    },
    async restart() {
      if (!gone(current.guard)) throw new Error(`${command.command} is still running`);
      current = await launch(command);
    },
    stop: () => stopGuard(current.guard, signal),
  };
}

interface Launched {
  guard: ChildProcess;
  pid: number;
}

async function launch({ command, args, ready, env, onLine }: GuardedCommand): Promise<Launched> {
  const guard = spawn('sh', ['-c', PAUSABLE_GUARD, 'pausable', command, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: env ?? process.env,
  });
  const pid = await new Promise<number>((resolve, reject) => {
    let output = '';
    let errors = '';
    const timer = setTimeout(() => fail(new Error(`${command} did not start within 30 s: ${errors}`)), 30_000);
    const exited = (code: number | null) => fail(new Error(`${command} exited with ${code}: ${errors}`));
    const collectErrors = (chunk: Buffer) => (errors = (errors + chunk.toString()).slice(-2000));
    const read = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
      const guarded = /guarded (\d+)/.exec(output);
      if (!guarded || probing) return;
      if (typeof ready === 'function') {
        probing = true;
        void probe(ready).then(() => {
          settle();
          resolve(Number(guarded[1]));
        });
      } else if (ready.test(output)) {
        settle();
        resolve(Number(guarded[1]));
      }
    };
    let probing = false;
    let settled = false;
    const probe = async (answers: () => Promise<boolean>) => {
      while (!settled && !(await answers().catch(() => false)))
        await new Promise((resolve) => setTimeout(resolve, 100));
    };
    const settle = () => {
      settled = true;
      clearTimeout(timer);
      guard.off('exit', exited);
      guard.stdout.off('data', read);
      guard.stderr.off('data', read);
      guard.stderr.off('data', collectErrors);
    };
    const fail = (error: Error) => {
      settle();
      guard.stdin.end();
      reject(error);
    };
    guard.once('exit', exited);
    guard.stderr.on('data', collectErrors);
    guard.stderr.on('data', read);
    guard.stdout.on('data', read);
  });
  // Kept reading so that the pipes never fill and block the process.
  for (const stream of [guard.stdout, guard.stderr]) {
    if (onLine) {
      let rest = '';
      stream.on('data', (chunk: Buffer) => {
        const lines = (rest + chunk.toString()).split('\n');
        rest = lines.pop()!.slice(-100_000);
        for (const line of lines) onLine(line);
      });
    } else stream.resume();
  }
  return { guard, pid };
}

const gone = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

function exit(child: ChildProcess): Promise<void> {
  return gone(child) ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

function stopGuard(guard: ChildProcess, signal: (name: NodeJS.Signals) => void): Promise<void> {
  if (gone(guard)) return Promise.resolve();
  const exited = exit(guard);
  const killer = setTimeout(() => signal('SIGKILL'), 10_000);
  signal('SIGCONT');
  guard.stdin!.end(); // the guard stops the process, then exits
  return exited.finally(() => clearTimeout(killer));
}
