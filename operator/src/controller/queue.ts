// A work queue in the manner of client-go's: a key is queued at most once, never processed by two
// workers at a time (a change during processing queues it again afterwards), and failures come back
// with per-key exponential backoff until the key succeeds.

const MAX_TIMER_MS = 2 ** 31 - 1;

export interface QueueOptions {
  baseDelayMs: number;
  maxDelayMs: number;
}

export class WorkQueue {
  private readonly queued: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiters: (() => void)[] = [];
  private closed = false;

  constructor(private readonly options: QueueOptions = { baseDelayMs: 1000, maxDelayMs: 5 * 60_000 }) {}

  /** Keys waiting for a worker (not those being processed or waiting out a delay). */
  get depth(): number {
    return this.queued.length;
  }

  add(key: string): void {
    if (this.closed || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // re-queued by done()
    this.queued.push(key);
    this.waiters.shift()?.();
  }

  /** Adds the key after `ms`; a sooner add() still wins. An earlier pending delay is replaced. */
  addAfter(key: string, ms: number): void {
    clearTimeout(this.timers.get(key));
    // setTimeout fires at once beyond 2^31-1 ms (~24.8 days); the reconcile recomputes what is left then.
    ms = Math.min(ms, MAX_TIMER_MS);
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        this.add(key);
      },
      Math.max(0, ms),
    );
    timer.unref();
    this.timers.set(key, timer);
  }

  /** Retry after a failure: 1×, 2×, 4× … the base delay, capped. */
  addRateLimited(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const delay = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** failures);
    this.addAfter(key, delay);
    return delay;
  }

  /** The key succeeded: its backoff starts over. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** The next key to process, or undefined once the queue is shut down. */
  async get(): Promise<string | undefined> {
    while (this.queued.length === 0) {
      if (this.closed) return undefined;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    const key = this.queued.shift()!;
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.queued.push(key);
      this.waiters.shift()?.();
    }
  }

  get length(): number {
    return this.queued.length;
  }

  shutDown(): void {
    this.closed = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    while (this.waiters.length > 0) this.waiters.shift()!();
  }
}
