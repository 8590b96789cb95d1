// Serialises writes to one document where the database cannot. MongoDB applies a filtered update
// atomically, so there nothing is needed. FerretDB v1 (the embedded database) evaluates the filter and
// writes in separate steps: concurrent `$inc`s are lost and two `{_version: 1}` updates can both win. On
// FerretDB every read-modify-write therefore runs under a lock per document: across replicas through Redis
// when it is configured, else within this process (the embedded database serves one API process).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Db } from 'mongodb';
import { DependencyUnavailableError } from '../errors.js';

export interface DocumentLocks {
  /** True where the database applies a filtered update atomically (MongoDB), so no lock is taken. */
  readonly atomic: boolean;
  /** Runs `write` while no other write to `key` (collection + _id) runs. */
  withLock<T>(key: string, write: () => Promise<T>): Promise<T>;
}

export const noLocks: DocumentLocks = { atomic: true, withLock: (_key, write) => write() };

/** One process-wide queue per key: every repository instance in the process shares it. */
const queues = new Map<string, Promise<unknown>>();

export const processLocks: DocumentLocks = {
  atomic: false,
  async withLock<T>(key: string, write: () => Promise<T>): Promise<T> {
    const previous = queues.get(key) ?? Promise.resolve();
    const run = previous.then(write, write);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    queues.set(key, settled);
    try {
      return await run;
    } finally {
      if (queues.get(key) === settled) queues.delete(key);
    }
  },
};

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

export class RedisLocks implements DocumentLocks {
  readonly atomic = false;
  constructor(
    private readonly redis: Redis,
    private readonly ttlMs = 10_000,
    private readonly waitMs = 5_000,
  ) {}

  async withLock<T>(key: string, write: () => Promise<T>): Promise<T> {
    const name = `portico:lock:${key}`;
    const token = randomUUID();
    const deadline = Date.now() + this.waitMs;
    for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
      let acquired: string | null;
      try {
        acquired = await this.redis.set(name, token, 'PX', this.ttlMs, 'NX');
      } catch (error) {
        throw new DependencyUnavailableError('Redis', { cause: error });
      }
      if (acquired === 'OK') break;
      if (Date.now() > deadline) throw new DependencyUnavailableError('a write lock');
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    try {
      return await write();
    } finally {
      await this.redis.eval(RELEASE, 1, name, token).catch(() => {});
    }
  }
}

/** Chooses by what the database is: locks only where FerretDB needs them. */
export async function documentLocksFor(db: Db, redis?: Redis): Promise<DocumentLocks> {
  const info = await db.admin().command({ buildInfo: 1 });
  if (!('ferretdbVersion' in info)) return noLocks;
  return redis ? new RedisLocks(redis) : processLocks;
}
