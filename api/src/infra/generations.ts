// Generation tokens: a random token per key (`conn:<id>`, `app:<id>`, …) that every change to what the key
// names replaces, before and after the change is written. A replica caches what it read together with the
// tokens it read first, and uses the cache only while the tokens are unchanged: with Redis, one MGET tells
// every replica about a change made anywhere, before the change's request has even been answered (unlike
// pub/sub, which arrives some time later). A key with no token (never changed, or expired) gets a fresh one
// on its first read, so a lost token can only make a cache look stale, never fresh. What is left: a change
// whose second replacement never happens (the process died in between, or Redis failed) leaves a reader
// that loaded during the write with stale data until its cache's TTL.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';

export interface Generations {
  /** The current token of each key. */
  read(keys: string[]): Promise<string[]>;
  /** Gives every key a fresh token. */
  bump(keys: string[]): Promise<void>;
}

/** One process (no Redis): tokens in memory; an evicted key simply gets a fresh token. */
export class LocalGenerations implements Generations {
  private readonly tokens = new LRUCache<string, string>({ max: 1_000_000 });

  async read(keys: string[]): Promise<string[]> {
    return keys.map((key) => {
      let token = this.tokens.get(key);
      if (token === undefined) this.tokens.set(key, (token = randomUUID()));
      return token;
    });
  }

  async bump(keys: string[]): Promise<void> {
    for (const key of keys) this.tokens.set(key, randomUUID());
  }
}

const PREFIX = 'portico:gen:';
/** Tokens lapse after a day without a change (a lapsed token reads as a fresh one). */
const TOKEN_SECONDS = 86_400;

/** Shared by every replica through Redis. */
export class RedisGenerations implements Generations {
  constructor(private readonly redis: Redis) {}

  async read(keys: string[]): Promise<string[]> {
    const names = keys.map((key) => PREFIX + key);
    const found = await this.redis.mget(...names);
    if (found.every((token) => token !== null)) return found as string[];
    // First read of a key: one token wins (NX), whoever sets it; read again to get the winner.
    const missing = names.filter((_, i) => found[i] === null);
    const pipeline = this.redis.pipeline();
    for (const name of missing) pipeline.set(name, randomUUID(), 'EX', TOKEN_SECONDS, 'NX');
    await pipeline.exec();
    const again = await this.redis.mget(...names);
    if (again.some((token) => token === null)) throw new Error('a generation token vanished as it was set');
    return again as string[];
  }

  async bump(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.set(PREFIX + key, randomUUID(), 'EX', TOKEN_SECONDS);
    const results = await pipeline.exec();
    const failed = results?.find(([error]) => error);
    if (failed) throw failed[0];
  }
}

/** Runs `change` between two bumps of `keys` (the second also when the change fails: it may have been written). */
export async function changing<T>(generations: Generations | undefined, keys: string[], change: () => Promise<T>): Promise<T> {
  if (!generations || keys.length === 0) return change();
  await generations.bump(keys);
  try {
    return await change();
  } finally {
    await generations.bump(keys);
  }
}
