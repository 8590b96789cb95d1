// Wake-ups for dispatchers: events committed and deliveries queued by requests in this process reach the local
// dispatcher at once; only a replica that runs no dispatcher (PORTICO_WEBHOOK_DISPATCH=false) tells the others over
// Redis pub/sub. Woken too, another replica's dispatcher would only race the local one for each event (a lock, a read
// and a refused claim each: a sixth of the database calls a patient creation costs). Polling is the backstop for work
// whose replica died.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { outsideChangeScope } from '../../shared/infra/change-scope.js';
import { pubSubClient } from '#core/infra/redis.js';
import type { DomainEvent } from './domain-event.js';

export const WORK_CHANNEL = 'portico:webhook-work';

export interface Work {
  events?: string[];
  deliveries?: string[];
}

/** What this process knows of events it committed itself (never sent to other replicas). */
export type KnownEvents = ReadonlyMap<string, Pick<DomainEvent, 'type' | 'customerAccountId' | 'targetEndpointId'>>;

export class WorkSignals {
  private readonly listeners: ((work: Work, known?: KnownEvents) => void)[] = [];
  /** Tells this process's own announcements apart when Redis echoes them back. */
  private readonly origin = randomUUID();

  constructor(private readonly redis?: Redis) {}

  announce(work: Work, known?: readonly DomainEvent[]): void {
    const local = known && new Map(known.map((event) => [event.id, event]));
    // The local dispatcher's work is its own, not the announcing request's (shared/infra/change-scope.ts).
    outsideChangeScope(() => {
      for (const listener of this.listeners) listener(work, local);
    });
    // Lost announcements are found by the dispatchers' polling.
    if (this.listeners.length === 0)
      this.redis?.publish(WORK_CHANNEL, JSON.stringify({ ...work, origin: this.origin })).catch(() => {});
  }

  /** Work announced by any replica, this one's at once; resolves once subscribed. Returns the unsubscribe. */
  async onAny(listener: (work: Work, known?: KnownEvents) => void): Promise<() => Promise<void>> {
    this.listeners.push(listener);
    const local = async () => {
      this.listeners.splice(this.listeners.indexOf(listener), 1);
    };
    if (!this.redis) return local;
    const subscriber = pubSubClient(this.redis);
    subscriber.on('message', (_channel: string, message: string) => {
      try {
        const { origin, ...work } = JSON.parse(message) as Work & { origin?: string };
        if (origin !== this.origin) listener(work);
      } catch {
        // not ours
      }
    });
    await subscriber.subscribe(WORK_CHANNEL);
    return async () => {
      await local();
      await subscriber.quit().catch(() => {});
    };
  }
}
