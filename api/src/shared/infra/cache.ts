// Read-through caches for data that changes rarely and is read on every request (credentials, relation
// tuples, accounts, patient profiles). Every write path invalidates; with Redis the invalidation reaches
// every replica over pub/sub, and a TTL bounds staleness should a message be lost. A load that raced with
// an invalidation is not cached (it is marked stale), so an invalidation is never undone by a slow reader;
// misses that come together share one load.
import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import type { LRUCache } from 'lru-cache';
import { lruCache } from './lru.js';
import { pubSubClient } from '#core/infra/redis.js';

const CHANNEL = 'portico:cache-invalidate';
const ALL = '*';

export interface CacheOptions {
  max: number;
  ttlMs: number;
  /**
   * How long a key found to have no value is remembered as such (default: not at all), so that the same miss
   * repeated costs one load; at most `max` of them, apart from the values, so misses never evict values.
   */
  missTtlMs?: number;
}

export class SharedCache<V extends object> {
  private readonly entries: LRUCache<string, V>;
  private readonly misses: LRUCache<string, true> | undefined;
  /** Loads in flight by key; an invalidation marks the key's load stale, so its result is not kept. */
  private readonly loading = new Map<string, { stale: boolean; value: Promise<V | null> }>();

  constructor(
    readonly name: string,
    options: CacheOptions,
    private readonly broadcast: (name: string, key: string) => void,
  ) {
    this.entries = lruCache<string, V>(options.max, { ttl: options.ttlMs });
    this.misses = options.missTtlMs ? lruCache<string, true>(options.max, { ttl: options.missTtlMs }) : undefined;
  }

  /** The cached value, or the loaded one (cached when `keep` says so; null only when misses are remembered). */
  async getOrLoad(
    key: string,
    load: () => Promise<V | null>,
    keep: (value: V) => boolean = () => true,
  ): Promise<V | null> {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    if (this.misses?.get(key)) return null;
    // Callers that miss together share one load; one that started before an invalidation is not joined.
    const flying = this.loading.get(key);
    if (flying) return flying.value;
    const entry = { stale: false, value: load() };
    this.loading.set(key, entry);
    try {
      const loaded = await entry.value;
      if (loaded !== null && keep(loaded) && !entry.stale) this.entries.set(key, loaded);
      if (loaded === null && !entry.stale) this.misses?.set(key, true);
      return loaded;
    } finally {
      if (this.loading.get(key) === entry) this.loading.delete(key);
    }
  }

  /**
   * What the cache holds for the key now, without loading or waiting: the value, null for a miss it remembers, else
   * undefined. For callers that answer at once when everything they need is cached (auth.ts).
   */
  peek(key: string): V | null | undefined {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    return this.misses?.get(key) ? null : undefined;
  }

  /** Forgets the key here and on every other replica. */
  invalidate(key: string): void {
    this.evict(key);
    this.broadcast(this.name, key);
  }

  /** Forgets everything here and on every other replica. */
  invalidateAll(): void {
    this.clear();
    this.broadcast(this.name, ALL);
  }

  evict(key: string): void {
    if (key === ALL) return this.clear();
    this.entries.delete(key);
    this.misses?.delete(key);
    this.forgetLoad(key);
  }

  clear(): void {
    this.entries.clear();
    this.misses?.clear();
    for (const key of [...this.loading.keys()]) this.forgetLoad(key);
  }

  private forgetLoad(key: string): void {
    const flying = this.loading.get(key);
    if (!flying) return;
    flying.stale = true;
    this.loading.delete(key);
  }
}

export class CacheHub {
  private readonly caches = new Map<string, SharedCache<object>>();
  private subscriber: Redis | undefined;

  private constructor(
    private readonly publisher: Redis | undefined,
    /** Where an invalidation that could not be published is logged. */
    private readonly logger: Pick<Logger, 'warn'> | undefined,
  ) {}

  /** In-process only (one replica), or shared invalidation over Redis pub/sub. */
  static async create(redis?: Redis, logger?: Pick<Logger, 'warn'>): Promise<CacheHub> {
    // The publisher queues while disconnected (the shared client fails fast): an invalidation made during a
    // blip still goes out on reconnection instead of being dropped.
    const publisher = redis && pubSubClient(redis);
    const hub = new CacheHub(publisher, logger);
    if (redis) {
      // A subscriber of its own that connects now and queues until ready (the shared client fails fast).
      const subscriber = pubSubClient(redis);
      // Messages sent while disconnected are lost: start from empty after every (re)connection.
      subscriber.on('ready', () => hub.clearAll());
      subscriber.on('message', (_channel: string, message: string) => {
        const [name, key] = message.split('\n', 2);
        if (name !== undefined && key !== undefined) hub.caches.get(name)?.evict(key);
      });
      await subscriber.subscribe(CHANNEL);
      hub.subscriber = subscriber;
    }
    return hub;
  }

  cache<V extends object>(name: string, options: CacheOptions): SharedCache<V> {
    const cache = new SharedCache<V>(name, options, (n, key) => {
      this.publisher
        ?.publish(CHANNEL, `${n}\n${key}`)
        .catch((error: unknown) =>
          this.logger?.warn(
            { err: error },
            'a cache invalidation could not be published; other replicas converge within the TTL',
          ),
        );
    });
    this.caches.set(name, cache as unknown as SharedCache<object>);
    return cache;
  }

  clearAll(): void {
    for (const cache of this.caches.values()) cache.clear();
  }

  async close(): Promise<void> {
    await this.subscriber?.quit().catch(() => {});
    await this.publisher?.quit().catch(() => {});
  }
}
