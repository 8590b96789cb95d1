// Time for the SDK's waits that moves only when the test says so: each sleep() is recorded and held until the
// test releases it, so a test does what it needs between two polls and never sleeps.
import type { Sleep } from '../../../sdk/js/src/index.js';
import { until } from '../../../testkit/until.js';

export class Ticks {
  /** Every wait asked for, in milliseconds, in order. */
  readonly waits: number[] = [];
  private held: (() => void)[] = [];

  readonly sleep: Sleep = (ms, signal) =>
    new Promise<void>((resolve) => {
      this.waits.push(ms);
      if (signal?.aborted) return resolve();
      this.held.push(resolve);
      signal?.addEventListener('abort', () => resolve(), { once: true });
    });

  /** Waits until the code under test sleeps (it has done what it does before its next wait); that wait's ms. */
  async asleep(): Promise<number> {
    await until('the SDK to wait', () => this.held.length > 0);
    return this.waits[this.waits.length - 1]!;
  }

  /** Ends the current wait. */
  release(): void {
    const next = this.held.shift();
    if (next === undefined) throw new Error('nothing is waiting');
    next();
  }

  /** Ends the current wait and waits for the next one; its ms. */
  async step(): Promise<number> {
    this.release();
    return this.asleep();
  }
}
