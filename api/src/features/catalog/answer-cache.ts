// The catalog's complete answers, kept for the snapshot and the endpoint-health publication they were built from:
// a search, lookup or logo redirect asked again (the same query string, brand and origin) is answered from memory
// instead of being validated, searched and serialised again. Every answer depends only on the request (its query
// string, the brand id, its origin) and on those two; the entries are dropped the first time either is seen to
// have changed, so a new snapshot or a new health publication changes answers at once, and a kept answer holds
// strings only, never the snapshot's objects (a replaced index is not kept alive by it).
//
// Bounded by bytes, not only by entries (docs/operations.md, "The catalog's answer cache"): each entry is counted
// at 2 bytes per character of its key, body and entity tag (V8 never stores a character in more) plus
// ENTRY_OVERHEAD for the objects around them, and all of them at most MAX_BYTES; as no entry counts under
// ENTRY_OVERHEAD, there are at most MAX_BYTES / ENTRY_OVERHEAD of them.
import type { LRUCache } from 'lru-cache';
import { sizedLruCache } from '../../shared/infra/lru.js';

/** 16 MiB of answers per replica: about 800 searches of 25 brands (200 of 100), or 9,000 brand lookups, or a mix. */
export const MAX_BYTES = 16 * 1024 * 1024;
/** What an entry is counted at beyond its strings (the entry, two answers and their header objects). */
export const ENTRY_OVERHEAD = 1024;
/** The most entries there can be: MAX_BYTES / ENTRY_OVERHEAD. */
export const MAX_ENTRIES = MAX_BYTES / ENTRY_OVERHEAD;

export class AnswerCache<V extends object> {
  private readonly entries: LRUCache<string, V>;
  private snapshotId: string | undefined;
  private healthVersion: string | undefined;

  constructor(
    /** The characters an entry holds (key included): counted twice, plus ENTRY_OVERHEAD. */
    charactersOf: (value: V, key: string) => number,
    maxBytes = MAX_BYTES,
  ) {
    this.entries = sizedLruCache<string, V>(maxBytes, (value, key) => 2 * charactersOf(value, key) + ENTRY_OVERHEAD);
  }

  /**
   * The answers of this snapshot and health publication (read once per request, with the snapshot the answer is
   * built from): emptied first when either differs from the last ones asked for.
   */
  of(snapshotId: string, healthVersion: string): LRUCache<string, V> {
    if (snapshotId !== this.snapshotId || healthVersion !== this.healthVersion) {
      this.entries.clear();
      this.snapshotId = snapshotId;
      this.healthVersion = healthVersion;
    }
    return this.entries;
  }

  /** Entries held now, and what they are counted at in all (bytes). */
  get usage(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.entries.calculatedSize };
  }
}
