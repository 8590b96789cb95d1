// The catalog's complete answers, kept for the snapshot and the endpoint-health publication they were built from:
// a search, lookup or logo redirect asked again (the same query string, brand and origin) is answered from memory
// instead of being validated, searched and serialised again. Every answer depends only on the request (its query
// string, the brand id, its origin) and on those two; the entries are dropped the first time either is seen to
// have changed, so a new snapshot or a new health publication changes answers at once, and a kept answer holds
// strings only, never the snapshot's objects (a replaced index is not kept alive by it).
//
// A search is kept from the second time it is asked (Sightings): typing sends a new prefix with every keystroke, and
// keeping each one would push the answers people share out of the cache, only to be evicted unread themselves.
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

/** How many searches Sightings remembers (the latest sighting in each slot): 256 KiB. */
export const SIGHTING_SLOTS = 1 << 16;

/**
 * The searches asked lately, each remembered by a 32-bit hash (FNV-1a) of its key in the slot the hash picks, the
 * latest in each slot: whether a search was asked before costs one pass over its key and no string kept. Two keys of
 * one hash (about one pair in four billion) count as one; a key whose slot another took since is asked afresh.
 */
export class Sightings {
  private readonly slots = new Uint32Array(SIGHTING_SLOTS);

  /** Records the key; true when it was recorded before and is still remembered. */
  seenBefore(key: string): boolean {
    let hash = 0x811c9dc5;
    for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
    const mark = (hash | 1) >>> 0; // never 0, what an empty slot holds
    const slot = ((hash >>> 16) ^ hash) & (SIGHTING_SLOTS - 1);
    if (this.slots[slot] === mark) return true;
    this.slots[slot] = mark;
    return false;
  }
}
