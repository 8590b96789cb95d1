// Least-recently-used caches bounded by their number of entries, whose memory grows with what they hold, or by
// the total size their entries are counted at.
// lru-cache's `max` allocates its bookkeeping for every entry it may ever hold when the cache is made (a
// million-entry cache costs 16 MB and 0.2 s before it holds anything, and each API process, command-line run and
// test server makes several); a bound on the entries' total size, each counting one, is the same bound without
// that cost.
import { LRUCache } from 'lru-cache';

export type LruOptions<K extends NonNullable<unknown>, V extends NonNullable<unknown>> = Omit<
  LRUCache.Options<K, V, unknown>,
  'max' | 'maxSize' | 'sizeCalculation' | 'maxEntrySize'
>;

/** A cache of at most `entries` entries, the least recently used evicted first. */
export function lruCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  entries: number,
  options: LruOptions<K, V> = {},
): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: entries, sizeCalculation: () => 1 });
}

/**
 * A cache whose entries, each counted at `sizeOf(value, key)` (at least 1), total at most `maxSize`, the least
 * recently used evicted first; an entry counted above `maxSize` is not kept at all. When every entry counts at
 * least `m`, the cache holds at most maxSize / m entries.
 */
export function sizedLruCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  maxSize: number,
  sizeOf: (value: V, key: K) => number,
  options: LruOptions<K, V> = {},
): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize, sizeCalculation: (value, key) => Math.max(1, sizeOf(value, key)) });
}
