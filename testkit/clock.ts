import type { Cancel, Clock, Scheduler } from '#core/clock.js';

/** Time that moves only when the test says so. */
export class ManualClock implements Clock {
  protected current: number;

  constructor(start: Date | number = Date.now()) {
    this.current = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(ms: number): void {
    this.current += ms;
  }
}

/** Real time, moved ahead when the test says so (for code that also waits on real timers and sockets). */
export class ShiftedClock implements Clock {
  private offset = 0;

  now(): Date {
    return new Date(Date.now() + this.offset);
  }

  advance(ms: number): void {
    this.offset += ms;
  }
}

interface Timer {
  due: number;
  order: number;
  callback: () => void;
  everyMs: number | undefined;
}

/** Lets the promise work queued so far run (what a timer set off), short of waiting for real I/O. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A clock and the timers of the code under test on one timeline that moves only when the test says so. A
 * timer fires at its due time exactly; between two timers, what the first set off settles (its promise
 * work, not real I/O: a test waits for that itself), so spacing read from this clock is what the code asked for.
 */
export class ManualTime extends ManualClock implements Scheduler {
  private timers: Timer[] = [];
  private order = 0;

  monotonic(): number {
    return this.current;
  }

  after(ms: number, callback: () => void): Cancel {
    return this.add(ms, callback, undefined);
  }

  every(ms: number, callback: () => void): Cancel {
    return this.add(ms, callback, ms);
  }

  /** Moving time without firing what falls due would lose timers: use tick(). */
  override advance(): never {
    throw new Error('ManualTime moves with tick() or next()');
  }

  /**
   * Moves to the earliest timer and fires every timer due at that instant, then lets what they set off settle;
   * false when no timer waits. (Settling between two of them could let real I/O in, which would not happen
   * within one instant.)
   */
  async next(): Promise<boolean> {
    await settle();
    const due = this.earliest()?.due;
    if (due === undefined) return false;
    for (let timer = this.earliest(); timer?.due === due; timer = this.earliest()) this.fire(timer);
    await settle();
    return true;
  }

  /** Moves time on by `ms`, firing in order what falls due on the way. */
  async tick(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (let timer = this.earliest(); timer && timer.due <= target; timer = this.earliest()) {
      this.fire(timer);
      await settle();
    }
    this.current = target;
    await settle();
  }

  /** Fires timers in order until `work` settles; fails if it waits on no timer (it would never settle). */
  async run<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    const watched = work.finally(() => (settled = true));
    watched.catch(() => {});
    await settle();
    while (!settled) {
      if (!(await this.next())) throw new Error('the work waits, and no timer is left to fire');
    }
    return watched;
  }

  private add(ms: number, callback: () => void, everyMs: number | undefined): Cancel {
    // As Node does, a delay under 1 ms is 1 ms (and whole milliseconds keep the Date clock exact).
    const timer: Timer = { due: this.current + Math.max(1, Math.ceil(ms)), order: this.order++, callback, everyMs };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  private earliest(): Timer | undefined {
    let first: Timer | undefined;
    for (const timer of this.timers)
      if (!first || timer.due < first.due || (timer.due === first.due && timer.order < first.order)) first = timer;
    return first;
  }

  private fire(timer: Timer): void {
    this.current = Math.max(this.current, timer.due);
    if (timer.everyMs === undefined) this.timers = this.timers.filter((t) => t !== timer);
    else Object.assign(timer, { due: timer.due + Math.max(1, Math.ceil(timer.everyMs)), order: this.order++ });
    timer.callback();
  }
}
