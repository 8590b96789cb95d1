// Admission of writes: at most `limit` write requests (every route guarded by idempotent(): the POSTs, PATCHes and
// DELETEs that change something) do their work at once in this process; the others wait their turn, first come
// first served, for at most `maxWaitMs`, and are then refused with 503 and Retry-After before doing anything.
//
// Why: after an outage every client retries at once, on top of new traffic. Let all of it through and the
// database queues the work instead, each request's calls wait behind everyone else's, calls pass their
// deadlines part-way through requests, and the work those requests already did is wasted: the service then
// completes far fewer writes a second than it can, and the backlog takes tens of seconds to clear (the fault
// suite measured 17–20 s). Queued here instead, a request either runs with the database answering promptly or
// is refused at once at no cost, so the service completes as many writes a second as the database allows
// and a backlog clears at that rate. A slot is held until the work ends, also when the request deadline
// (deadline.ts) answered the client sooner, so abandoned work still counts against the limit.
import { AsyncResource } from 'node:async_hooks';
import PQueue from 'p-queue';
import { Counter, Gauge, type Registry } from 'prom-client';
import { AppError } from './errors.js';

/** Seconds a refused client is asked to wait: long enough for a queue of waiting writes to move on. */
export const ADMISSION_RETRY_AFTER_SECONDS = 2;

export interface AdmissionOptions {
  /** Writes doing their work at once in this process. */
  limit: number;
  /** How long a write waits for its turn before it is refused. */
  maxWaitMs: number;
  registry?: Registry;
}

export class WriteAdmission {
  private readonly queue: PQueue;
  private readonly refused: Counter | undefined;

  constructor(private readonly options: AdmissionOptions) {
    this.queue = new PQueue({ concurrency: options.limit });
    if (options.registry) {
      const registers = [options.registry];
      this.refused = new Counter({
        name: 'portico_write_admission_refused_total',
        help: 'Write requests refused 503 after waiting their turn too long.',
        registers,
      });
      const queue = this.queue;
      new Gauge({
        name: 'portico_writes_in_flight',
        help: 'Write requests doing their work in this process.',
        registers,
        collect() {
          this.set(queue.pending);
        },
      });
      new Gauge({
        name: 'portico_writes_waiting',
        help: 'Write requests waiting for their turn in this process.',
        registers,
        collect() {
          this.set(queue.size);
        },
      });
    }
  }

  /**
   * Runs `work` in its turn; throws 503 SERVICE_UNAVAILABLE (nothing done) when the turn does not come in time:
   * within maxWaitMs, and by `startBy` (a performance.now() instant: the request's own deadline leaves it only
   * so long), and while `abandoned` says nobody waits for the answer any more.
   */
  async run<T>(
    work: () => Promise<T>,
    { startBy, abandoned }: { startBy?: number; abandoned?: () => boolean } = {},
  ): Promise<T> {
    let started = false;
    const refusal = () => {
      this.refused?.inc();
      return new AppError(
        'SERVICE_UNAVAILABLE',
        'The service is busy with other writes; nothing was done. Try again shortly.',
        {},
        { 'Retry-After': String(ADMISSION_RETRY_AFTER_SECONDS) },
      );
    };
    const waitMs = Math.min(this.options.maxWaitMs, startBy === undefined ? Infinity : startBy - performance.now());
    if (waitMs <= 0) throw refusal();
    // Aborts only a write still waiting: p-queue also gives up on a running task when its signal aborts, and a
    // running write keeps its slot until its work ends.
    const waiting = new AbortController();
    const timer = setTimeout(() => waiting.abort(), waitMs);
    // Run in the caller's async context, not that of the write whose end freed the slot.
    const task = AsyncResource.bind(() => {
      clearTimeout(timer);
      if (abandoned?.()) throw refusal();
      started = true;
      return work();
    });
    try {
      return await this.queue.add(task, { signal: waiting.signal });
    } catch (error) {
      if (started || error instanceof AppError) throw error;
      throw refusal();
    }
  }

  /** Resolves once no write works or waits (a shutdown lets writes the request deadline abandoned finish). */
  idle(): Promise<void> {
    return this.queue.onIdle();
  }

  /** Writes doing their work, and waiting (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    return { running: this.queue.pending, waiting: this.queue.size };
  }
}
