// The webhook dispatcher (docs/api.md, "Receiving webhooks"). Every API replica runs one (and `portico dispatch` runs
// one alone). What it does with a committed event or a queued delivery is delivery-runner.ts; here is when. Wake-ups
// come in process and over Redis (signals.ts); a poll is the backstop for what no wake-up announced: events left by a
// dispatcher that died (its lease ends), deliveries due on a replica that restarted, events staged by a process that
// died before committing.
import type { KnownEvents } from '../../events/index.js';
import { DeliveryRunner } from './delivery-runner.js';

const POLL_BATCH = 200;
const RETENTION_MS = 30 * 24 * 3_600_000;
const PRUNE_EVERY_MS = 3_600_000;

export class Dispatcher extends DeliveryRunner {
  private pollTimer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private lastPrune = 0;

  async start(): Promise<void> {
    this.running = true;
    this.unsubscribe = await this.deps.signals.onAny((work, known) => this.wake(work, known));
    // A tick while a pass runs is skipped: on a slow database, passes that overlapped added scans to what slowed it.
    this.pollTimer = setInterval(() => void (this.polling ?? this.poll()), this.deps.settings.pollMs);
    this.pollTimer.unref();
    void this.poll();
  }

  /** Stops taking work, lets attempts in flight finish (up to `graceMs`), and writes what it recorded. */
  async stop(graceMs = 10_000): Promise<void> {
    this.running = false;
    clearInterval(this.pollTimer);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await this.unsubscribe?.();
    // A pass under way starts nothing once stopped; what it started is waited for with the rest.
    const grace = new Promise((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([this.polling, grace]);
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    await this.recorder.flush();
  }

  /** One backstop pass (also what tests call after moving an injected clock), after the one running if any: passes
   * never overlap. */
  async poll(): Promise<void> {
    while (this.polling) await this.polling;
    this.polling = this.pass().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async pass(): Promise<void> {
    if (!this.running) return;
    const now = this.deps.clock.now();
    try {
      const recovered = await this.deps.recovery.recoverStaged(now);
      if (recovered.abandoned > 0)
        this.deps.logger.warn(
          { abandoned: recovered.abandoned },
          'staged outbox events abandoned: their change was neither recorded nor ruled out within a day',
        );
      for (const id of await this.deps.events.unclaimed(now, POLL_BATCH))
        if (this.running) this.track(this.dispatchEvent(id));
      for (const id of await this.deps.deliveries.due(now, POLL_BATCH))
        if (this.running) this.track(this.runDelivery(id));
      await this.metrics.backlog(now, this.deps);
      if (now.getTime() - this.lastPrune > PRUNE_EVERY_MS) {
        this.lastPrune = now.getTime();
        const before = new Date(now.getTime() - RETENTION_MS);
        await this.deps.deliveries.prune(before);
        await this.deps.events.prune(before);
      }
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'webhook dispatcher poll failed; retrying at the next one');
    }
  }

  /** Waits until nothing is in flight (tests). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    await this.recorder.flush();
  }

  private wake(work: { events?: string[]; deliveries?: string[] }, known?: KnownEvents): void {
    if (!this.running) return;
    for (const id of work.events ?? []) this.track(this.dispatchEvent(id, known?.get(id)));
    for (const id of work.deliveries ?? []) this.track(this.runDelivery(id));
  }
}
