/** Time is injected so that 24-hour windows and schedules are testable without waiting. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** Stops a timer (a no-op once it fired). */
export type Cancel = () => void;

/**
 * Waiting is injected too where code paces itself by its own timers (check schedules, per-host rates,
 * retries), so that a test moves that time instead of sleeping through it.
 */
export interface Scheduler {
  /** Milliseconds on a clock that never jumps: what waits are measured in. */
  monotonic(): number;
  /** Calls `callback` once, `ms` from now; `unref`: the timer alone does not keep the process alive. */
  after(ms: number, callback: () => void, options?: { unref?: boolean }): Cancel;
  /** Calls `callback` every `ms`. */
  every(ms: number, callback: () => void): Cancel;
}

export const systemScheduler: Scheduler = {
  monotonic: () => performance.now(),
  after(ms, callback, options) {
    const timer = setTimeout(callback, ms);
    if (options?.unref) timer.unref();
    return () => clearTimeout(timer);
  },
  every(ms, callback) {
    const timer = setInterval(callback, ms);
    return () => clearInterval(timer);
  },
};
