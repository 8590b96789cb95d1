// In-memory brand search for GET /catalog/brands (CONTRACT §6.1). The catalog is a snapshot: the index is
// built once per snapshot and then only read, at high request rates, so build-time work is traded freely
// for query-time speed. The layout is described in layout.ts.
//
// Matching (CONTRACT §6.1):
// - q is trimmed; under MIN_QUERY_LENGTH characters → no results. It is folded and split into words as
//   core/src/catalog/fold.ts describes.
// - Every query word must be a prefix of some indexed word of the brand (word-start matching), so "mass gen"
//   finds "Massachusetts General" and a user who has not finished a middle word still gets results.
// - Words match independently and in any field: the name, any alias, the city, or the state (its
//   two-letter code or the words of its full name). "providence seattle" may match the name by one word and
//   the city by the other. A repeated query word is satisfied by the same indexed word twice.
// Ranking, best first (a name that starts with the whole query has all its words in the name, so the phrase
// prefix is the stronger tier):
//   0. the folded name starts with the folded query (words joined by one space): "st m" → "St. Mary's …";
//   1. every query word matches in the name;
//   2. every query word matches in the name or an alias, at least one only in an alias;
//   3. the rest: some word matched only the city or state.
// Ties by folded name, then id (code-unit order, no locale), which is the internal brand number: results
// are deterministic for a given snapshot whatever the order of the input.
import type { CatalogBrand, PlatformType } from '../../../../core/src/catalog/model.js';
import { words } from '../../../../core/src/catalog/fold.js';
import { buildLayout, FIELD_ALIAS, FIELD_NAME, platformNumber, type IndexLayout } from './layout.js';

export interface BrandSearchOptions {
  platform?: PlatformType;
  /** At most this many brands are returned (the route validates 1–100). */
  limit: number;
}

/** Shorter queries (after trimming) find nothing (seed §8). */
const MIN_QUERY_LENGTH = 2;
// Below this many tokens a linear walk of a brand's tokens beats a binary search.
const LINEAR_SCAN_MAX = 32;

export class BrandSearchIndex {
  readonly size: number;
  // Marks brands already considered by the current query: a brand can appear in the candidate slice once
  // per token of the range ("st" → "st", "stanford"). A generation number instead of clearing the array
  // keeps each query's cost proportional to its candidates, not to the catalog.
  private readonly seen: Uint32Array;
  private generation = 0;

  private constructor(private readonly layout: IndexLayout) {
    this.size = layout.brands.length;
    this.seen = new Uint32Array(this.size);
  }

  static build(brands: readonly CatalogBrand[]): BrandSearchIndex {
    return new BrandSearchIndex(buildLayout(brands));
  }

  get(id: string): CatalogBrand | undefined {
    const b = this.layout.byId.get(id);
    return b === undefined ? undefined : this.layout.brands[b];
  }

  search(q: string, options: BrandSearchOptions): CatalogBrand[] {
    const query = q.trim();
    // Code points, not UTF-16 units: one astral character is one character to the person typing it.
    if (query.length < MIN_QUERY_LENGTH || (query.length === 2 && query.codePointAt(0)! > 0xffff)) return [];
    // The route allows 1–100; clamping to the catalog keeps the result buffer small whatever a caller passes.
    const limit = Math.min(Math.floor(options.limit), this.size);
    const terms = words(query);
    if (terms.length === 0 || !(limit >= 1)) return [];

    const { postingStart, postings, foldedNames, platforms, brands } = this.layout;
    const count = terms.length;
    const lo = new Uint32Array(count);
    const hi = new Uint32Array(count);
    for (let i = 0; i < count; i++) {
      const [from, to] = this.prefixRange(terms[i]!);
      if (from === to) return []; // a word that starts no indexed word: nothing can match
      lo[i] = from;
      hi[i] = to;
    }
    // Candidates come from the word reaching the fewest postings; the others are checked per candidate,
    // rarest first so that a non-match is found after as few checks as possible.
    const checkOrder = terms.map((_, i) => i);
    const reach = (i: number) => postingStart[hi[i]!]! - postingStart[lo[i]!]!;
    checkOrder.sort((a, b) => reach(a) - reach(b));
    const pivot = checkOrder[0]!;

    const platform = options.platform === undefined ? -1 : platformNumber(options.platform);
    const phrase = terms.join(' ');
    const size = this.size;
    const seen = this.seen;
    const generation = this.nextGeneration();
    // The best `limit` keys so far, ascending. key = tier × size + brand number orders by tier, then by
    // (folded name, id); keys are unique because brand numbers are.
    const top = new Float64Array(limit);
    let filled = 0;

    const end = postingStart[hi[pivot]!]!;
    for (let p = postingStart[lo[pivot]!]!; p < end; p++) {
      const b = postings[p]!;
      if (seen[b] === generation) continue;
      seen[b] = generation;
      const worst = filled === limit ? top[limit - 1]! : Infinity;
      if (b >= worst) continue; // could not beat the current results even in tier 0
      if (platform >= 0 && platforms[b] !== platform) continue;

      let key: number;
      // A name that starts with the query matches every word in the name by construction (each query word
      // is a prefix of the name word at its position), so tier 0 needs no per-word check.
      if (foldedNames[b]!.startsWith(phrase)) {
        key = b;
      } else {
        if (size + b >= worst) continue; // only tier 0 could have beaten the current results
        const tier = this.tierOf(b, lo, hi, checkOrder);
        if (tier < 0) continue;
        key = tier * size + b;
        if (key >= worst) continue;
      }
      // Insertion into a sorted array of at most `limit` (≤ 100) keys: cheaper than a heap at this size.
      let i = filled < limit ? filled++ : limit - 1;
      while (i > 0 && top[i - 1]! > key) {
        top[i] = top[i - 1]!;
        i--;
      }
      top[i] = key;
    }

    const results: CatalogBrand[] = new Array(filled);
    for (let i = 0; i < filled; i++) results[i] = brands[top[i]! % size]!;
    return results;
  }

  /**
   * 1, 2 or 3 (see the header) when every query word matches some field of brand b, else -1. Tier 0 is
   * decided by the caller. Each word is checked against the brand's own ascending token ids.
   */
  private tierOf(b: number, lo: Uint32Array, hi: Uint32Array, checkOrder: readonly number[]): number {
    const { brandTokenStart, brandTokens, brandTokenFields } = this.layout;
    const first = brandTokenStart[b]!;
    const last = brandTokenStart[b + 1]!;
    let allInName = true;
    let allInNameOrAlias = true;
    for (const w of checkOrder) {
      const from = lo[w]!;
      const to = hi[w]!;
      let fields = 0;
      // A brand merged from thousands of rows (one shared multi-tenant URL) has as many tokens: skip to the
      // range by binary search rather than walking every one of them for every query that reaches it.
      let i = first;
      if (last - first > LINEAR_SCAN_MAX) {
        let end = last;
        while (i < end) {
          const mid = (i + end) >>> 1;
          if (brandTokens[mid]! < from) i = mid + 1;
          else end = mid;
        }
      }
      for (; i < last; i++) {
        const token = brandTokens[i]!;
        if (token >= to) break; // ascending: no later token can be in range
        if (token >= from) fields |= brandTokenFields[i]!;
      }
      if (fields === 0) return -1;
      if ((fields & FIELD_NAME) === 0) {
        allInName = false;
        if ((fields & FIELD_ALIAS) === 0) allInNameOrAlias = false;
      }
    }
    return allInName ? 1 : allInNameOrAlias ? 2 : 3;
  }

  /** [lo, hi): the ids of the tokens that start with prefix, by two binary searches over the sorted tokens. */
  private prefixRange(prefix: string): [number, number] {
    const tokens = this.layout.tokens;
    let lo = 0;
    let hi = tokens.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (tokens[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    // From lo on, tokens that start with prefix come first (they sort right after it), then the rest.
    const from = lo;
    hi = tokens.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (tokens[mid]!.startsWith(prefix)) lo = mid + 1;
      else hi = mid;
    }
    return [from, lo];
  }

  private nextGeneration(): number {
    if (this.generation === 0xffffffff) {
      this.seen.fill(0);
      this.generation = 0;
    }
    return ++this.generation;
  }
}
