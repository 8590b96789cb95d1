// In-memory brand search for GET /catalog/brands (docs/api.md, "The catalog search"). The catalog is a snapshot: the
// index is built once per snapshot and then only read, at high request rates, so build-time work is traded freely for
// query-time speed. The layout is described in layout.ts.
//
// Matching (docs/api.md, "The catalog search"):
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
//
// Around those exact matches come other phases, each filling what the one before left of `limit` and
// never returning a brand twice (the `taken` marks):
//   1. a URL, host name or NPI: the brands it names (addresses.ts), by how closely;
//   2. the exact word matches above;
//   3. the typo-tolerant fallback (fuzzy.ts, near-words.ts): `exact` in the result marks where it begins.
// With `near`, each phase orders by distance first (places.ts); every key is (step × RANKS + rank) × size + b,
// an exact integer in a double. Without words, `near` alone gives the nearest brands.
import type { CatalogBrand, PlatformType } from '#core/catalog/model.js';
import { words } from '#core/catalog/fold.js';
import { AddressIndex, addressOf, isNpiShaped, type AddressQuery } from './addresses.js';
import { buildLayout, platformNumber, type IndexLayout } from './layout.js';
import type { BrowsePosition } from './browse-cursor.js';
import { browse } from './browse.js';
import { phraseOf, prefixRanges, RANKS, startsWithPhrase, tierOf, type Phrase } from './tokens.js';
import { FuzzyPhase } from './fuzzy.js';
import type { GeoPoint } from '#core/catalog/geo.js';
import { originOf, PlaceIndex, TopKeys, WALK_ABOVE_REACH, type Origin } from './places.js';
import { searchResult, type SearchResult } from './results.js';

export interface BrandSearchOptions {
  platform?: PlatformType;
  /** At most this many brands are returned (the route validates 1–100). */
  limit: number;
  /** Order by distance from this point instead of by tier (brands without a location last); alone, the nearest brands.
   * */
  near?: GeoPoint;
  /** Only brands whose number b (see mask) has only[b] !== 0: a filter kept outside the snapshot (endpoint status). */
  only?: Uint8Array;
}

/** Shorter queries (after trimming) find nothing (docs/api.md, "The catalog search"). */
const MIN_QUERY_LENGTH = 2;
/** The typo-tolerant fallback looks at queries of at most this many distinct words (a pasted paragraph is not a typo).
 * */
export const MAX_FUZZY_WORDS = 8;

/** What every phase of one query shares: the filters and the marks of brands already in the results. */
interface Query {
  platform: number;
  only: Uint8Array | undefined;
  origin: Origin | undefined;
  /** taken[b] === takenMark: b is already in the results. */
  takenMark: number;
}

export class BrandSearchIndex {
  readonly size: number;
  // Marks brands already considered by the current phase of a query: a brand can appear in the candidate
  // slice once per token of the range ("st" → "st", "stanford"). A generation number instead of clearing
  // the array keeps each query's cost proportional to its candidates, not to the catalog.
  private readonly seen: Uint32Array;
  private generation = 0;
  // Marks brands already in the current query's results, so a later phase does not return them again.
  private readonly taken: Uint32Array;
  private takenGeneration = 0;
  private readonly places: PlaceIndex;
  private readonly addresses: AddressIndex;
  private readonly fuzzy: FuzzyPhase<Query>;
  /** 1 for a brand whose folded name another brand has too (brands are in folded-name order: a neighbour's). */
  private readonly namesake: Uint8Array;

  private constructor(private readonly layout: IndexLayout) {
    this.size = layout.brands.length;
    const names = layout.foldedNames;
    this.namesake = Uint8Array.from(names, (name, b) => Number(names[b - 1] === name || names[b + 1] === name));
    this.seen = new Uint32Array(this.size);
    this.taken = new Uint32Array(this.size);
    this.places = PlaceIndex.build(layout.brands);
    this.addresses = AddressIndex.build(layout.brands);
    this.fuzzy = new FuzzyPhase<Query>(layout, this.places, {
      accepts: (b, query) => this.accepts(b, query),
      keyOf: (b, rank, query) => this.keyOf(b, rank, query),
      seen: this.seen,
      nextGeneration: () => this.nextGeneration(),
    });
  }

  static build(this: void, brands: readonly CatalogBrand[]): BrandSearchIndex {
    return new BrandSearchIndex(buildLayout(brands));
  }

  get(id: string): CatalogBrand | undefined {
    const b = this.layout.byId.get(id);
    return b === undefined ? undefined : this.layout.brands[b];
  }

  /** A filter for `only`: 1 for the brands `keep` accepts, by brand number. */
  mask(keep: (brand: CatalogBrand) => boolean): Uint8Array {
    const mask = new Uint8Array(this.size);
    this.layout.brands.forEach((brand, b) => {
      if (keep(brand)) mask[b] = 1;
    });
    return mask;
  }

  search(q: string, options: BrandSearchOptions): SearchResult {
    // The route allows 1–100; clamping to the catalog keeps the result buffers small whatever a caller passes.
    const limit = Math.min(Math.floor(options.limit), this.size);
    if (!(limit >= 1)) return { brands: [], exact: 0 };
    const query: Query = {
      platform: options.platform === undefined ? -1 : platformNumber(options.platform),
      only: options.only,
      origin: options.near && originOf(options.near),
      takenMark: this.nextTakenMark(),
    };
    const text = q.trim();
    // Code points, not UTF-16 units: one astral character is one character to the person typing it.
    if (text.length < MIN_QUERY_LENGTH || (text.length === 2 && text.codePointAt(0)! > 0xffff)) {
      if (query.origin === undefined) return { brands: [], exact: 0 };
      const results: number[] = [];
      this.take(
        results,
        this.places.nearest(query.origin, limit, RANKS, (b) => (this.accepts(b, query) ? 0 : -1))!,
        query,
      );
      return searchResult(this.layout, this.namesake, this.places, results, results.length, query.origin);
    }

    const results: number[] = [];
    const identifier = isNpiShaped(text) ? text : addressOf(text);
    if (identifier !== null) this.take(results, this.identifierMatches(identifier, limit, query), query);
    const byIdentifier = results.length;
    const typed = words(text);
    // A repeated word may match the same indexed word again, so it adds no condition: matching each distinct
    // word once gives the same results, and "health health …" costs what "health" does.
    const terms = [...new Set(typed)];
    const ranges = terms.length === 0 ? undefined : prefixRanges(this.layout, terms);
    if (ranges && ranges.complete && results.length < limit)
      this.take(
        results,
        this.exactMatches(
          phraseOf(this.layout, typed, terms, ranges.lo, ranges.hi),
          terms,
          ranges.lo,
          ranges.hi,
          limit - results.length,
          query,
        ),
        query,
      );
    const exact = results.length;
    // An address or a number that found brands is not misspelt words: the fallback is for names and places.
    // One that found none may be words after all ("St.Marys", "Stanfrod.Health").
    if (ranges && byIdentifier === 0 && results.length < limit && terms.length <= MAX_FUZZY_WORDS) {
      this.take(results, this.fuzzy.matches(terms, ranges.lo, ranges.hi, limit - results.length, query), query);
    }
    return searchResult(this.layout, this.namesake, this.places, results, exact, query.origin);
  }

  /**
   * Browsing without words (browse.ts): one platform's brands in rank order (folded name, then id), `limit` of them
   * after the position a previous page's `nextCursor` names (cursorPosition()).
   */
  browse(platform: PlatformType, limit: number, after?: BrowsePosition, only?: Uint8Array): SearchResult {
    return browse(this.layout, platform, limit, after, only);
  }

  /** A filter every phase applies: the platform, the `only` mask, and not already in the results. */
  private accepts(b: number, query: Query): boolean {
    return (
      (query.platform < 0 || this.layout.platforms[b] === query.platform) &&
      (query.only === undefined || query.only[b] !== 0) &&
      this.taken[b] !== query.takenMark
    );
  }

  /** The key of brand b at `rank` within its phase: by distance first when the query is near a point. */
  private keyOf(b: number, rank: number, query: Query): number {
    const base = query.origin === undefined ? 0 : this.places.step(b, query.origin) * RANKS;
    return (base + rank) * this.size + b;
  }

  private take(results: number[], top: TopKeys, query: Query): void {
    for (let i = 0; i < top.filled; i++) {
      const b = top.keys[i]! % this.size;
      results.push(b);
      this.taken[b] = query.takenMark;
    }
  }

  /** A URL or host name (by address), or a 10-digit NPI: these brands come first. */
  private identifierMatches(identifier: string | AddressQuery, limit: number, query: Query): TopKeys {
    const top = new TopKeys(limit);
    const seen = this.seen;
    const generation = this.nextGeneration();
    // A brand can be reached twice (its FHIR host and its portal host under one domain); the first visit
    // has its best tier, since its own host is visited before the subdomains.
    const offer = (b: number, tier: number) => {
      if (seen[b] === generation || !this.accepts(b, query)) return;
      seen[b] = generation;
      top.offer(this.keyOf(b, tier, query));
    };
    if (typeof identifier === 'string') for (const b of this.addresses.npiMatches(identifier)) offer(b, 0);
    else this.addresses.matches(identifier, offer);
    return top;
  }

  /** Every term a prefix of some word of the brand, ranked by tier, or by distance near a point. */
  private exactMatches(
    phrase: Phrase,
    terms: readonly string[],
    lo: Uint32Array,
    hi: Uint32Array,
    limit: number,
    query: Query,
  ): TopKeys {
    const { postingStart, postings } = this.layout;
    // Candidates come from the word reaching the fewest postings; the others are checked per candidate,
    // rarest first so that a non-match is found after as few checks as possible.
    const checkOrder = terms.map((_, i) => i);
    const reach = (i: number) => postingStart[hi[i]!]! - postingStart[lo[i]!]!;
    checkOrder.sort((a, b) => reach(a) - reach(b));
    const pivot = checkOrder[0]!;

    const rankOf = (b: number) =>
      !this.accepts(b, query)
        ? -1
        : startsWithPhrase(this.layout, b, phrase)
          ? 0
          : tierOf(this.layout, b, lo, hi, checkOrder);
    // Near a point, a common word reaches much of the catalog: walking outwards from the point and testing
    // each brand then stops after a few hundred, where measuring every candidate would not stop at all. When
    // the matches turn out sparse (the walk tests as many brands as there are candidates), the candidates win.
    if (query.origin !== undefined && reach(pivot) > WALK_ABOVE_REACH) {
      const walked = this.places.nearest(query.origin, limit, RANKS, rankOf, reach(pivot));
      if (walked) return walked;
    }
    const size = this.size;
    const seen = this.seen;
    const generation = this.nextGeneration();
    const top = new TopKeys(limit);
    const byDistance = query.origin !== undefined;

    const end = postingStart[hi[pivot]!]!;
    for (let p = postingStart[lo[pivot]!]!; p < end; p++) {
      const b = postings[p]!;
      if (seen[b] === generation) continue;
      seen[b] = generation;
      const worst = top.worst;
      // Ranked by tier, key = tier × size + b: a brand numbered at or past the worst key cannot beat it even in tier 0.
      if (!byDistance && b >= worst) continue;
      if (!this.accepts(b, query)) continue;
      // A name that starts with the query matches every word in the name by construction (each query word
      // is a prefix of the name word at its position), so tier 0 needs no per-word check.
      let tier = 0;
      if (!startsWithPhrase(this.layout, b, phrase)) {
        if (!byDistance && size + b >= worst) continue; // only tier 0 could have beaten the current results
        tier = tierOf(this.layout, b, lo, hi, checkOrder);
        if (tier < 0) continue;
      }
      top.offer(this.keyOf(b, tier, query));
    }
    return top;
  }

  private nextGeneration(): number {
    return (this.generation = nextMark(this.seen, this.generation));
  }

  private nextTakenMark(): number {
    return (this.takenGeneration = nextMark(this.taken, this.takenGeneration));
  }
}

/** The mark after `current` for per-query marks over brand numbers, clearing them once the marks would wrap. */
function nextMark(marks: Uint32Array, current: number): number {
  if (current !== 0xffffffff) return current + 1;
  marks.fill(0);
  return 1;
}
