// How an API replica follows something a publisher writes to MongoDB for its catalog (the active snapshot,
// the endpoint health): one load at a time, with one rerun when asked meanwhile; polling every `pollMs` as the
// backstop; and, with Redis, a load as soon as an announcement the caller recognises arrives.
import type { Redis } from 'ioredis';
import { pubSubClient } from '#core/infra/redis.js';

export interface FollowOptions {
  pollMs: number;
  redis?: Redis;
  channel: string;
  /** Whether an announcement on the channel concerns what this follower loads. */
  concerns: (message: string) => boolean;
  /** A load the timer or an announcement started failed; the previous state keeps being served. */
  onError: (error: unknown) => void;
}

export class Follower {
  private refreshing: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private subscriber: Redis | undefined;

  constructor(private readonly load: () => Promise<void>) {}

  /** Brings the state up to date. Concurrent calls share one run (plus one rerun). */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      try {
        do {
          this.again = false;
          await this.load();
        } while (this.again);
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  /** Starts polling and, with Redis, listening; the caller has made its first load. */
  async follow(options: FollowOptions): Promise<void> {
    const poll = () => this.refresh().catch(options.onError);
    this.timer = setInterval(() => void poll(), options.pollMs);
    this.timer.unref();
    if (options.redis) {
      const subscriber = pubSubClient(options.redis);
      subscriber.on('message', (_channel: string, message: string) => {
        if (options.concerns(message)) void poll();
      });
      await subscriber.subscribe(options.channel);
      this.subscriber = subscriber;
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.subscriber?.quit().catch(() => {});
    await this.refreshing?.catch(() => {});
  }
}
