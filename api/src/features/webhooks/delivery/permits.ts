// The per-endpoint cap across replicas (at most 10 attempts in flight per endpoint: docs/api.md, "Receiving
// webhooks"). Each replica's Lanes keep its own attempts to 10; with Redis, an attempt also holds one of the
// endpoint's 10 shared permits: a sorted set of holders scored by when their hold lapses (an attempt's deadline plus
// a margin, so a replica that dies mid-attempt frees its permits by itself). Time comes from Redis, so replicas with
// skewed clocks agree. When Redis does not answer in time the attempt goes ahead under the local cap alone (logged
// once): deliveries never stop because shared state is unreachable.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

export type Release = () => void;

export interface Permits {
  /** Waits for one of the lane's shared permits (or until `stopped()`); the release, or null when stopped. */
  acquire(lane: string, stopped: () => boolean): Promise<Release | null>;
}

/** One replica, or no Redis: the local lanes are the whole cap. */
export const localPermits: Permits = { acquire: async (_lane, stopped) => (stopped() ? null : () => {}) };

const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0`;

type PermitRedis = Redis & {
  porticoPermitAcquire(key: string, token: string, limit: number, holdMs: number): Promise<number>;
};

export class RedisPermits implements Permits {
  private readonly redis: PermitRedis;
  private warned = false;

  constructor(
    redis: Redis,
    private readonly limit: number,
    /** How long a permit is held at most: the attempt's deadline plus a margin. */
    private readonly holdMs: number,
    private readonly logger: Logger,
    private readonly timeoutMs = 500,
  ) {
    if (!('porticoPermitAcquire' in redis))
      redis.defineCommand('porticoPermitAcquire', { numberOfKeys: 1, lua: ACQUIRE });
    this.redis = redis as PermitRedis;
  }

  async acquire(lane: string, stopped: () => boolean): Promise<Release | null> {
    const key = `portico:webhook-permits:${lane}`;
    const token = randomUUID();
    for (let wait = 25; ; wait = Math.min(wait * 2, 500)) {
      if (stopped()) return null;
      const granted = await this.ask(key, token);
      if (granted === undefined) return () => {}; // Redis unavailable: the local cap alone
      if (granted) return () => void this.redis.zrem(key, token).catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, wait * (0.5 + Math.random())));
    }
  }

  /** Whether the permit was granted; undefined when Redis did not answer within the deadline. */
  private async ask(key: string, token: string): Promise<boolean | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const deadline = new Promise<undefined>(
        (resolve) => (timer = setTimeout(() => resolve(undefined), this.timeoutMs)),
      );
      const answer = await Promise.race([
        this.redis.porticoPermitAcquire(key, token, this.limit, this.holdMs),
        deadline,
      ]);
      if (answer === undefined) throw new Error(`no answer within ${this.timeoutMs} ms`);
      this.warned = false;
      return answer === 1;
    } catch (error) {
      if (!this.warned)
        this.logger.warn(
          { err: error },
          'webhook permits unavailable in Redis; each replica keeps its own cap of attempts per endpoint',
        );
      this.warned = true;
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
