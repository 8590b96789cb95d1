// What every feature's builder (features/<name>/create.ts) is given: the configuration, the database (with the
// deadline of requests, and of long operations for index builds and scans), Redis when there is one, the document
// locks, the shared caches, the clock, the logger, the metrics registry, the gateway's generation tokens and rate
// limiters. Opened once by the composition root (wiring.ts) from the connections main.ts (or a test) opened.
import type { Redis } from 'ioredis';
import type { Db } from 'mongodb';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Clock } from '#core/clock.js';
import { documentLocksFor, type DocumentLocks } from '#core/infra/locks.js';
import type { Config } from '../../config.js';
import { CacheHub } from './cache.js';
import { LocalGenerations, RedisGenerations, type Generations } from './generations.js';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter, type RatePolicy } from './rate-limit.js';

export interface Infrastructure {
  config: Config;
  /** The database with the request deadline (core/src/infra/mongo.ts). */
  db: Db;
  /** The same database with the deadline of long operations: index builds, scans, background work. */
  longDb: Db;
  redis: Redis | undefined;
  locks: DocumentLocks;
  caches: CacheHub;
  clock: Clock;
  logger: Logger;
  /** What /metrics shows (the process's default metrics included). */
  registry: Registry;
  /** Tokens that tell every replica's gateway a connection, a user's connections, an app or an ingest changed. */
  generations: Generations;
  /** A rate limiter for `policy`: shared by the replicas over Redis, else this process's own. */
  limiter(policy: RatePolicy): RateLimiter;
}

export async function openInfrastructure(opened: {
  config: Config;
  db: Db;
  longDb: Db;
  redis: Redis | undefined;
  clock: Clock;
  logger: Logger;
}): Promise<Infrastructure> {
  const { db, redis, clock, logger } = opened;
  const caches = await CacheHub.create(redis, logger);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    ...opened,
    locks: await documentLocksFor(db, redis),
    caches,
    registry,
    generations: redis ? new RedisGenerations(redis, logger) : new LocalGenerations(),
    limiter: (policy) => (redis ? new RedisRateLimiter(redis, policy) : new MemoryRateLimiter(policy, clock)),
  };
}
