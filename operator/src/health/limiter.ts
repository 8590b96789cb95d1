// How endpoint checks share the network: at most `concurrency` requests in flight overall, and per host at most
// `perHostConcurrency` in flight and `perHostRate` started (a token bucket per host holding a single token, so requests
// to a host are evenly spaced: 2/s is one every 500 ms, never two at once and then a pause, and no one-second window
// sees more than the rate). A few hosts serve thousands of brands each (eClinicalWorks' healow, Oracle Health,
// Veradigm), so a host whose limits are reached waits without holding a global slot: the other hosts' requests go
// ahead, taken round-robin, never stuck behind the busiest host's queue.
import type { Cancel, Scheduler } from '#core/clock.js';
import type { Rate } from '../shared/catalog-spec.js';

export interface LimiterSettings {
  concurrency: number;
  perHostConcurrency: number;
  perHostRate: Rate;
}

export class LimiterStoppedError extends Error {
  constructor() {
    super('the endpoint checks stopped');
  }
}

interface Task {
  /** Runs the request; frees its slots with `free`, then settles the caller's promise with its outcome. */
  start: (free: () => void) => void;
  fail: (error: Error) => void;
  /** The host's block count when the task was queued: a higher one at start means it waited for the host. */
  blocksAtQueue: number;
}

class Fifo<T> {
  private items: T[] = [];
  private head = 0;
  get size(): number {
    return this.items.length - this.head;
  }
  push(item: T): void {
    this.items.push(item);
  }
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head++];
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
  drain(): T[] {
    const rest = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return rest;
  }
}

interface Host {
  queue: Fifo<Task>;
  inFlight: number;
  tokens: number;
  refilledAt: number;
  /** Waiting in the ready line. */
  listed: boolean;
  /** Waiting for a token: cancels the wait. */
  timer: Cancel | undefined;
  /** Times this host's limits held its queue back. */
  blocks: number;
}

export interface LimiterHooks {
  /** A request waited for its host's limits (not only for a global slot). */
  onThrottled?: () => void;
  /** What tokens refill by and waits are timed with (the sweeper's: systemScheduler in production). */
  scheduler: Scheduler;
}

/** Keeps one small record per host it has seen (its bucket must outlive idle moments to hold the rate). */
export class HostLimiter {
  private readonly hosts = new Map<string, Host>();
  private readonly ready = new Fifo<Host>();
  private active = 0;
  private stopped = false;
  private readonly msPerToken: number;
  private readonly scheduler: Scheduler;

  constructor(
    private readonly settings: LimiterSettings,
    private readonly hooks: LimiterHooks,
  ) {
    this.msPerToken = settings.perHostRate.periodMs / settings.perHostRate.count;
    this.scheduler = hooks.scheduler;
  }

  /** Requests running now, over all hosts. */
  get inFlight(): number {
    return this.active;
  }

  /** Runs `task` once the global and the host's limits let it start. */
  run<T>(host: string, task: () => Promise<T>): Promise<T> {
    if (this.stopped) return Promise.reject(new LimiterStoppedError());
    const state = this.hostOf(host);
    return new Promise<T>((resolve, reject) => {
      state.queue.push({
        start: (free) =>
          void Promise.resolve()
            .then(task)
            .then(
              (value) => {
                free();
                resolve(value);
              },
              (error: unknown) => {
                free();
                reject(error instanceof Error ? error : new Error(JSON.stringify(error)));
              },
            ),
        fail: reject,
        blocksAtQueue: state.blocks,
      });
      this.list(state);
      this.pump();
    });
  }

  /** Refuses new requests and fails the queued ones; running ones finish. */
  stop(): void {
    this.stopped = true;
    for (const host of this.hosts.values()) {
      host.timer?.();
      for (const task of host.queue.drain()) task.fail(new LimiterStoppedError());
    }
  }

  private hostOf(name: string): Host {
    let host = this.hosts.get(name);
    if (!host) {
      host = {
        queue: new Fifo(),
        inFlight: 0,
        tokens: 1,
        refilledAt: this.now(),
        listed: false,
        timer: undefined,
        blocks: 0,
      };
      this.hosts.set(name, host);
    }
    return host;
  }

  private now(): number {
    return this.scheduler.monotonic();
  }

  /** Puts a host with work in the ready line, unless it is there, waits for a token, or is at its cap. */
  private list(host: Host): void {
    if (host.listed || host.timer || host.queue.size === 0 || host.inFlight >= this.settings.perHostConcurrency) return;
    host.listed = true;
    this.ready.push(host);
  }

  private pump(): void {
    while (!this.stopped && this.active < this.settings.concurrency) {
      const host = this.ready.shift();
      if (!host) return;
      host.listed = false;
      if (host.queue.size === 0) continue;
      if (host.inFlight >= this.settings.perHostConcurrency) {
        host.blocks++; // listed again when one of its requests ends
        continue;
      }
      this.refill(host);
      if (host.tokens < 1) {
        host.blocks++;
        this.waitForToken(host);
        continue;
      }
      host.tokens -= 1;
      const task = host.queue.shift()!;
      if (host.blocks > task.blocksAtQueue) this.hooks.onThrottled?.();
      this.start(host, task);
      this.list(host); // round-robin: to the back of the line
    }
  }

  private refill(host: Host): void {
    const now = this.now();
    host.tokens = Math.min(1, host.tokens + (now - host.refilledAt) / this.msPerToken);
    host.refilledAt = now;
  }

  private waitForToken(host: Host): void {
    const wait = Math.max(1, Math.ceil((1 - host.tokens) * this.msPerToken));
    host.timer = this.scheduler.after(wait, () => {
      host.timer = undefined;
      this.list(host);
      this.pump();
    });
  }

  private start(host: Host, task: Task): void {
    this.active++;
    host.inFlight++;
    task.start(() => {
      this.active--;
      host.inFlight--;
      // Work left and not in line nor waiting for a token: its cap held it back.
      if (host.queue.size > 0 && !host.listed && !host.timer) host.blocks++;
      this.list(host);
      this.pump();
    });
  }
}
