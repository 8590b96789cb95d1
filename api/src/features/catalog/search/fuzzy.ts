// The catalog search's typo-tolerant fallback (docs/api.md, "The catalog search"), the last phase of a query in
// index.ts: when the exact word matches leave room under `limit`, brands where every query word is a prefix of
// one of their words or within a few typing errors of one (near-words.ts), at least one needing the errors. The
// index hands over its filters, ranking keys and per-phase marks, so the fallback never returns a brand an
// earlier phase returned and ranks its brands after theirs on the same key scale.
import type { IndexLayout } from './layout.js';
import { NearWords } from './near-words.js';
import { TopKeys, WALK_ABOVE_REACH, type Origin, type PlaceIndex } from './places.js';
import { fuzzyRank, MAX_RANKED_EDITS, RANKS, TIERS } from './tokens.js';
import { sizedLruCache } from '../../../shared/infra/lru.js';

/** A word's near tokens (NearWords.find), by ascending token id, with the edits of each. */
interface Near {
  ids: Uint32Array;
  edits: Uint8Array;
}

/**
 * How much of each word's near tokens the fallback keeps, per snapshot: a person typing sends the words finished so
 * far again with every keystroke ("mercy m", "mercy me"…), and many people start with the same words, so a word's
 * near tokens are found once, not per query. An entry counts its token ids, its characters and NEAR_ENTRY_UNITS for
 * its own objects (some 400 bytes): at most 250,000 in all, under 8,000 entries and about 4 MB, beside an index of
 * tens of MB. (A bound of 2,000 entries kept too few of the first words of the benchmark's 32,768 prefixes: a miss
 * cost 133-136 us against 103-118.)
 */
const NEAR_CACHE_SIZE = 250_000;
const NEAR_ENTRY_UNITS = 32;

/** What the fallback uses of the index it belongs to, for a query of type Q. */
export interface FuzzyHost<Q extends { origin: Origin | undefined }> {
  /** Brand b passes the query's filters and is not in its results yet. */
  accepts(b: number, query: Q): boolean;
  /** The key of brand b at `rank` within a phase of the query (by distance first near a point). */
  keyOf(b: number, rank: number, query: Q): number;
  /** Marks of the brands a phase has considered: seen[b] is the phase's mark once b was. */
  readonly seen: Uint32Array;
  /** A new mark for a phase. */
  nextGeneration(): number;
}

export class FuzzyPhase<Q extends { origin: Origin | undefined }> {
  private readonly near: NearWords;
  private readonly nearCache = sizedLruCache<string, Near>(
    NEAR_CACHE_SIZE,
    (near, word) => near.ids.length + word.length + NEAR_ENTRY_UNITS,
  );

  /** Built once per snapshot, with the index. */
  constructor(
    private readonly layout: IndexLayout,
    private readonly places: PlaceIndex,
    private readonly host: FuzzyHost<Q>,
  ) {
    this.near = NearWords.build(layout.tokens);
  }

  /**
   * The typo-tolerant fallback: brands where every term is a prefix of one of their words or
   * within a few edits of one (near-words.ts), and at least one needed the edits. Ranked by total edits,
   * then tier (1–3 as for exact matches), then name and id; near a point, by distance first. `lo` and `hi` are
   * the terms' prefix ranges of token ids.
   */
  matches(terms: readonly string[], lo: Uint32Array, hi: Uint32Array, limit: number, query: Q): TopKeys {
    const { postingStart, postings } = this.layout;
    const host = this.host;
    const top = new TopKeys(limit);
    const count = terms.length;
    const nearIds: Uint32Array[] = [];
    const nearEdits: Uint8Array[] = [];
    const minEdits = new Uint8Array(count);
    let pivot = -1;
    let pivotReach = Infinity;
    for (let i = 0; i < count; i++) {
      const { ids, edits } = this.nearOf(terms[i]!);
      nearIds.push(ids);
      nearEdits.push(edits);
      let reach = postingStart[hi[i]!]! - postingStart[lo[i]!]!;
      minEdits[i] = reach > 0 ? 0 : ids.length > 0 ? Math.min(...edits) : 0;
      for (const id of ids) reach += postingStart[id + 1]! - postingStart[id]!;
      if (reach === 0) return top; // a word that is neither a prefix nor near any indexed word
      if (reach < pivotReach) {
        pivot = i;
        pivotReach = reach;
      }
    }
    const leastTotal = minEdits.reduce((sum, e) => sum + e, 0);
    // A fuzzy match needs at least one word matched through a near word, so the brands reached by the near
    // words of all terms are every candidate; when that is fewer postings than the pivot's, they are the
    // cheaper place to start (a common exact word with a rare misspelt one: "saint jsoeph").
    let nearReach = 0;
    for (let i = 0; i < count; i++) {
      for (const id of nearIds[i]!) nearReach += postingStart[id + 1]! - postingStart[id]!;
    }
    if (nearReach === 0) return top; // no word has a near word: every match is exact, already found
    const rankOf = (b: number) => {
      if (!host.accepts(b, query)) return -1;
      const rank = fuzzyRank(this.layout, b, lo, hi, nearIds, nearEdits);
      return rank >= TIERS ? rank : -1; // rank < TIERS: no edits, an exact match
    };
    if (query.origin !== undefined && Math.min(pivotReach, nearReach) > WALK_ABOVE_REACH) {
      const walked = this.places.nearest(query.origin, limit, RANKS, rankOf, Math.min(pivotReach, nearReach));
      if (walked) return walked;
    }

    // Where candidates come from, fewest edits first: each token with its postings (ascending brand numbers),
    // and the least total edits a brand reached through it can have.
    const sources: [token: number, least: number][] = [];
    if (nearReach < pivotReach) {
      for (let i = 0; i < count; i++) {
        nearIds[i]!.forEach((t, k) => sources.push([t, leastTotal - minEdits[i]! + nearEdits[i]![k]!]));
      }
    } else {
      const othersMin = leastTotal - minEdits[pivot]!;
      for (let t = lo[pivot]!; t < hi[pivot]!; t++) sources.push([t, othersMin]);
      nearIds[pivot]!.forEach((t, k) => sources.push([t, othersMin + nearEdits[pivot]![k]!]));
    }
    sources.sort((a, b) => a[1] - b[1]);

    const size = this.layout.brands.length;
    const seen = host.seen;
    const generation = host.nextGeneration();
    const byDistance = query.origin !== undefined;
    for (const [token, least] of sources) {
      // Ranked by edits, the best rank a brand from this token can reach: at least one edit, tier 1.
      const floor = (Math.min(Math.max(least, 1), MAX_RANKED_EDITS) * TIERS + 1) * size;
      const end = postingStart[token + 1]!;
      for (let p = postingStart[token]!; p < end; p++) {
        const b = postings[p]!;
        // Ascending brand numbers: the rest of this token cannot do better.
        if (!byDistance && floor + b >= top.worst) break;
        if (seen[b] === generation) continue;
        seen[b] = generation;
        const rank = rankOf(b);
        if (rank >= 0) top.offer(host.keyOf(b, rank, query));
      }
    }
    return top;
  }

  /** The word's near tokens, from the cache when it was asked for lately. */
  private nearOf(word: string): Near {
    let near = this.nearCache.get(word);
    if (near === undefined) {
      const ids: number[] = [];
      const edits: number[] = [];
      this.near.find(word, ids, edits);
      const order = ids.map((_, k) => k).sort((a, b) => ids[a]! - ids[b]!);
      near = { ids: Uint32Array.from(order, (k) => ids[k]!), edits: Uint8Array.from(order, (k) => edits[k]!) };
      this.nearCache.set(word, near);
    }
    return near;
  }
}
