// Generation tokens: a random token per key (`conn:<id>`, `app:<id>`, …) that every change to what the key
// names replaces, before and after the change is written. A replica caches what it read together with the
// tokens it read first, and uses the cache only while the tokens are unchanged: with Redis, one MGET tells
// every replica about a change made anywhere, before the change's request has even been answered (unlike
// pub/sub, which arrives some time later).
//
// Reading never writes: a key with no token (never changed, or lapsed) reads as undefined, and a reader then
// caches nothing; ensure() gives it a token, and only callers that have checked the caller may see the key
// use it (so requests for ids that do not exist, or are another tenant's, leave nothing behind and cost the
// same). A lost token can only make a cache look stale, never fresh. What is left: a change whose second
// replacement fails is retried in the background for a minute; until one succeeds (or the process dies in
// between), a reader that loaded during the write keeps stale data until its cache's TTL.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { lruCache } from './lru.js';
import type { Logger } from 'pino';

export interface Generations {
  /** The current token of each key; undefined for a key without one. Never writes. */
  read(keys: string[]): Promise<(string | undefined)[]>;
  /** The current token of each key, after giving each key without one a fresh token. */
  ensure(keys: string[]): Promise<string[]>;
  /** Gives every key a fresh token. */
  bump(keys: string[]): Promise<void>;
  /** A bump that failed after its change was written: retried in the background (and logged) until it succeeds. */
  bumpLater(keys: string[]): void;
}

/** One process (no Redis): tokens in memory; an evicted key simply has no token. */
export class LocalGenerations implements Generations {
  private readonly tokens = lruCache<string, string>(1_000_000);

  async read(keys: string[]): Promise<(string | undefined)[]> {
    return keys.map((key) => this.tokens.get(key));
  }

  async ensure(keys: string[]): Promise<string[]> {
    return keys.map((key) => {
      let token = this.tokens.get(key);
      if (token === undefined) this.tokens.set(key, (token = randomUUID()));
      return token;
    });
  }

  async bump(keys: string[]): Promise<void> {
    for (const key of keys) this.tokens.set(key, randomUUID());
  }

  bumpLater(keys: string[]): void {
    void this.bump(keys);
  }
}

const PREFIX = 'portico:gen:';
/** Tokens lapse after a day without a change (a lapsed token reads as none). */
const TOKEN_SECONDS = 86_400;
/** A failed bump after a change is retried every second for a minute. */
const LATE_RETRIES = 60;
const LATE_RETRY_MS = 1000;

/** Shared by every replica through Redis. */
export class RedisGenerations implements Generations {
  constructor(
    private readonly redis: Redis,
    private readonly logger?: Logger,
  ) {}

  async read(keys: string[]): Promise<(string | undefined)[]> {
    if (keys.length === 0) return [];
    return (await this.redis.mget(...keys.map((key) => PREFIX + key))).map((token) => token ?? undefined);
  }

  async ensure(keys: string[]): Promise<string[]> {
    const found = await this.read(keys);
    if (found.every((token) => token !== undefined)) return found;
    // One token wins (NX), whoever sets it; read again to get the winner.
    const pipeline = this.redis.pipeline();
    keys.forEach(
      (key, i) => found[i] === undefined && pipeline.set(PREFIX + key, randomUUID(), 'EX', TOKEN_SECONDS, 'NX'),
    );
    await pipeline.exec();
    const again = await this.read(keys);
    if (again.some((token) => token === undefined)) throw new Error('a generation token vanished as it was set');
    return again as string[];
  }

  async bump(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.set(PREFIX + key, randomUUID(), 'EX', TOKEN_SECONDS);
    const results = await pipeline.exec();
    const failed = results?.find(([error]) => error);
    if (failed?.[0]) throw failed[0];
  }

  bumpLater(keys: string[], attempt = 1): void {
    setTimeout(() => {
      this.bump(keys).then(
        () => this.logger?.info({ keys, attempt }, 'generation tokens replaced after a failed attempt'),
        (error: unknown) => {
          if (attempt < LATE_RETRIES) return this.bumpLater(keys, attempt + 1);
          this.logger?.error(
            { err: error, keys },
            'generation tokens could not be replaced after a change: other replicas may use cached state until its TTL',
          );
        },
      );
    }, LATE_RETRY_MS).unref();
  }
}

/**
 * Runs `change` between two bumps of `keys`. A failure of the first is the answer (nothing was written). A
 * change that fails may still have been written: the keys are bumped again and the change's own error is
 * thrown. A change that succeeded is reported as such even if the second bump fails (docs/api.md, "Rules every
 * operation follows": an executed operation is never reported as a retryable failure); that bump is retried in the
 * background.
 */
export async function changing<T>(
  generations: Generations | undefined,
  keys: string[],
  change: () => Promise<T>,
): Promise<T> {
  if (!generations || keys.length === 0) return change();
  await generations.bump(keys);
  let result: T;
  try {
    result = await change();
  } catch (error) {
    await generations.bump(keys).catch(() => generations.bumpLater(keys));
    throw error;
  }
  await generations.bump(keys).catch(() => generations.bumpLater(keys));
  return result;
}
