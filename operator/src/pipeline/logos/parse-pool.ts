// Worker threads that parse untrusted artwork off the event loop, each task under a deadline. A worker
// that overruns is terminated (V8 stops it mid-loop) and its task fails with `parse-timeout`, counted like any
// other logo failure; a worker that crashes or runs out of its heap fails its task with `parse-failed`. Either
// way the next task gets a fresh worker. Workers are reused, at most `size` at once, further tasks wait in
// order. Idle workers do not keep the process alive and exit after `idleMs`; close() ends them all.
// A task's deadline runs from the moment its worker is ready (its modules loaded): on a busy machine a fresh
// worker's start-up can take seconds, and that is not the artwork's doing. Start-up has a deadline of its own.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { LogoError } from './errors.js';
import type { ParseReady, ParseReply, ParseRequest } from './parse-ops.js';

export interface ParsePoolOptions {
  /** The worker's module: by default parse-worker.js beside this file (both compiled into dist by tsc). */
  workerUrl?: URL;
  /** Workers at most (default: 2, or 1 on a single core). */
  size?: number;
  /** Time one task may take in its worker, from hand-over to a ready worker to answer (default 2 s). */
  deadlineMs?: number;
  /** An idle worker exits after this long (default 10 s). */
  idleMs?: number;
  /** Heap of each worker, in MiB: artwork is at most a few MiB, so a task needing far more is hostile (default 256). */
  maxHeapMb?: number;
}

export const DEFAULT_PARSE_DEADLINE_MS = 2000;
/** How long a fresh worker may take to load before it counts as failed (`parse-failed`). */
const START_DEADLINE_MS = 60_000;
/** The reasons a task fails with when the parser, not the artwork, gave up. */
export const PARSER_FAILURES: ReadonlySet<string> = new Set(['parse-timeout', 'parse-failed']);

interface Task {
  op: string;
  args: unknown[];
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  /** Its modules are loaded and it takes tasks. */
  ready: boolean;
  starting?: NodeJS.Timeout;
  task?: Task & { id: number };
  deadline?: NodeJS.Timeout;
  idle?: NodeJS.Timeout;
}

export class ParsePool {
  private readonly workerUrl: URL;
  private readonly size: number;
  private readonly deadlineMs: number;
  private readonly idleMs: number;
  private readonly maxHeapMb: number;
  private readonly slots = new Set<Slot>();
  private readonly queue: Task[] = [];
  private nextId = 0;
  private closed = false;
  /** Workers started and tasks that overran their deadline, for tests and metrics. */
  readonly counters = { started: 0, timedOut: 0, failed: 0 };

  constructor(options: ParsePoolOptions = {}) {
    this.workerUrl = options.workerUrl ?? new URL('./parse-worker.js', import.meta.url);
    this.size = Math.max(1, options.size ?? Math.min(2, availableParallelism()));
    this.deadlineMs = options.deadlineMs ?? DEFAULT_PARSE_DEADLINE_MS;
    this.idleMs = options.idleMs ?? 10_000;
    this.maxHeapMb = options.maxHeapMb ?? 256;
  }

  /** Runs `op` in a worker; rejects with a LogoError `parse-timeout` when it overruns the deadline. */
  run(op: string, args: unknown[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('the artwork parser is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ op, args, resolve, reject });
      this.dispatch();
    });
  }

  /** Workers alive now. */
  get workers(): number {
    return this.slots.size;
  }

  /** Ends every worker; tasks still waiting or running are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    const error = new Error('the artwork parser was closed');
    for (const task of this.queue.splice(0)) task.reject(error);
    const slots = [...this.slots];
    for (const slot of slots) this.forget(slot)?.reject(error);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  private dispatch(): void {
    while (this.queue.length > 0 && !this.closed) {
      let slot = [...this.slots].find((s) => s.task === undefined);
      if (slot === undefined) {
        if (this.slots.size >= this.size) return;
        slot = this.start();
      }
      const task = { ...this.queue.shift()!, id: ++this.nextId };
      clearTimeout(slot.idle);
      slot.task = task;
      slot.worker.ref(); // a task under way keeps the process alive; an idle worker does not
      if (slot.ready) this.arm(slot);
      slot.worker.postMessage({ id: task.id, op: task.op, args: task.args } satisfies ParseRequest);
    }
  }

  /** Starts the deadline of the slot's task. */
  private arm(slot: Slot): void {
    slot.deadline = setTimeout(() => this.overran(slot), this.deadlineMs);
  }

  private start(): Slot {
    const worker = new Worker(this.workerUrl, { resourceLimits: { maxOldGenerationSizeMb: this.maxHeapMb } });
    const slot: Slot = { worker, ready: false };
    slot.starting = setTimeout(() => {
      this.crashed(slot, `the artwork parser did not start within ${START_DEADLINE_MS} ms`);
      void worker.terminate();
    }, START_DEADLINE_MS);
    worker.on('message', (reply: ParseReply | ParseReady) =>
      'ready' in reply ? this.started(slot) : this.answered(slot, reply),
    );
    // A worker's uncaught exception is whatever it threw, not always an Error (@types/node 24 says `any`).
    worker.on('error', (error: unknown) =>
      this.crashed(slot, `the artwork parser failed: ${error instanceof Error ? error.message : String(error)}`),
    );
    worker.on('exit', (code) => this.crashed(slot, `the artwork parser exited with code ${code}`));
    this.slots.add(slot);
    this.counters.started++;
    return slot;
  }

  private started(slot: Slot): void {
    clearTimeout(slot.starting);
    slot.ready = true;
    if (slot.task !== undefined) this.arm(slot);
  }

  private answered(slot: Slot, reply: ParseReply): void {
    const task = slot.task;
    if (task === undefined || reply.id !== task.id) return;
    clearTimeout(slot.deadline);
    slot.task = undefined;
    if ('error' in reply)
      task.reject(
        reply.error.reason ? new LogoError(reply.error.reason, reply.error.message) : new Error(reply.error.message),
      );
    else task.resolve(reply.value);
    slot.worker.unref();
    slot.idle = setTimeout(() => this.retire(slot), this.idleMs).unref();
    this.dispatch();
  }

  private overran(slot: Slot): void {
    this.counters.timedOut++;
    this.forget(slot)?.reject(
      new LogoError('parse-timeout', `parsing the artwork took longer than ${this.deadlineMs} ms`),
    );
    void slot.worker.terminate();
    this.dispatch();
  }

  private crashed(slot: Slot, message: string): void {
    if (!this.slots.has(slot)) return; // terminated by us: its task is settled already
    this.counters.failed++;
    this.forget(slot)?.reject(new LogoError('parse-failed', message));
    this.dispatch();
  }

  private retire(slot: Slot): void {
    if (slot.task !== undefined) return;
    this.forget(slot);
    void slot.worker.terminate();
  }

  /** Takes the slot out of the pool; returns its task, if it had one, for the caller to settle. */
  private forget(slot: Slot): Task | undefined {
    this.slots.delete(slot);
    clearTimeout(slot.starting);
    clearTimeout(slot.deadline);
    clearTimeout(slot.idle);
    const task = slot.task;
    slot.task = undefined;
    return task;
  }
}
