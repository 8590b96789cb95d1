// Wake-ups for dispatchers: events committed and deliveries queued by requests in this process reach the
// local dispatcher at once, and every other replica's over Redis pub/sub. Polling is only the backstop.
import type { Redis } from 'ioredis';

export const WORK_CHANNEL = 'portico:webhook-work';

export interface Work {
  events?: string[];
  deliveries?: string[];
}

export class WorkSignals {
  private readonly listeners: ((work: Work) => void)[] = [];

  constructor(private readonly redis?: Redis) {}

  announce(work: Work): void {
    for (const listener of this.listeners) listener(work);
    // Lost announcements are found by the dispatchers' polling.
    this.redis?.publish(WORK_CHANNEL, JSON.stringify(work)).catch(() => {});
  }

  /** Work announced in this process. */
  onLocal(listener: (work: Work) => void): void {
    this.listeners.push(listener);
  }

  /** Work announced by any replica (this one included); resolves once subscribed. Returns the unsubscribe. */
  async onAny(listener: (work: Work) => void): Promise<() => Promise<void>> {
    if (!this.redis) {
      this.onLocal(listener);
      return async () => {};
    }
    const subscriber = this.redis.duplicate({ lazyConnect: false, enableOfflineQueue: true, maxRetriesPerRequest: null });
    subscriber.on('error', () => {});
    subscriber.on('message', (_channel: string, message: string) => {
      try {
        listener(JSON.parse(message) as Work);
      } catch {
        // not ours
      }
    });
    await subscriber.subscribe(WORK_CHANNEL);
    return async () => {
      await subscriber.quit().catch(() => {});
    };
  }
}
