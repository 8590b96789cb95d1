// Builds the flat, typed-array layout that BrandSearchIndex queries. Everything here runs once per catalog
// snapshot; everything per query lives in index.ts. The layout is designed so that a query allocates
// nothing proportional to the catalog:
//
// - brands are numbered in rank order (folded name, then id), so "ties by name, then id" is a comparison of
//   two integers at query time;
// - the distinct folded words ("tokens") are sorted, so the tokens that start with a query word form one
//   contiguous range [lo, hi), found by binary search;
// - the postings of all tokens are concatenated in token order, so the brands reached by a whole prefix
//   range are one contiguous slice, and postingStart doubles as cumulative counts: the size of that slice is
//   known in O(1), which is how the most selective query word is chosen;
// - each brand keeps its own ascending token ids with a bit mask of the fields the token occurs in, so the
//   other query words are checked against a handful of integers instead of another posting list.
import type { CatalogBrand } from '#core/catalog/model.js';
import { PLATFORM_TYPES } from '#core/catalog/model.js';
import { words } from '#core/catalog/fold.js';
import { stateCode, stateName } from '#core/catalog/states.js';

/** Where a token occurs in a brand; a token found in several fields has several bits. */
export const FIELD_NAME = 1;
export const FIELD_ALIAS = 2;
export const FIELD_LOCATION = 4;
// Fields occupy the low three bits of a packed (token id, fields) integer during the build.
const FIELD_BITS = 3;

export interface IndexLayout {
  /** The brands in rank order: index = internal brand number. */
  brands: readonly CatalogBrand[];
  /** Each brand's folded name words joined by one space, for the phrase-prefix tier. */
  foldedNames: readonly string[];
  /** Index into PLATFORM_TYPES of each brand. */
  platforms: Uint8Array;
  byId: ReadonlyMap<string, number>;
  /** Distinct folded words of every indexed field, sorted by UTF-16 code units. */
  tokens: readonly string[];
  /** tokens.length + 1 offsets into postings; postingStart[t] is also the number of postings before token t. */
  postingStart: Uint32Array;
  /** Brand numbers, ascending within each token. */
  postings: Uint32Array;
  /** size + 1 offsets into brandTokens / brandTokenFields. */
  brandTokenStart: Uint32Array;
  /** Each brand's distinct token ids, ascending. */
  brandTokens: Uint32Array;
  brandTokenFields: Uint8Array;
  /**
   * The token ids of each brand's first two name words (2 × size; NO_TOKEN where the name has fewer): whether a name
   * starts with the query is then mostly a comparison of integers, without reading the name (index.ts).
   */
  nameLeads: Uint32Array;
}

/** In nameLeads, a name word that is not there. */
export const NO_TOKEN = 0xffffffff;
/** How many leading name words nameLeads keeps per brand. */
export const NAME_LEADS = 2;

const PLATFORM_NUMBERS: ReadonlyMap<string, number> = new Map(PLATFORM_TYPES.map((p, i) => [p, i]));

export function platformNumber(platform: string): number {
  const n = PLATFORM_NUMBERS.get(platform);
  if (n === undefined) throw new TypeError(`unknown platform type ${JSON.stringify(platform)}`);
  return n;
}

// Code-unit order, the same order Array.prototype.sort gives the tokens: no locale, so stable everywhere.
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function buildLayout(input: readonly CatalogBrand[]): IndexLayout {
  const nameWords = input.map((b) => words(b.name));
  const folded = nameWords.map((w) => w.join(' '));
  const order = input.map((_, i) => i);
  order.sort((a, b) => compare(folded[a]!, folded[b]!) || compare(input[a]!.id, input[b]!.id));

  const size = input.length;
  const brands = order.map((i) => input[i]!);
  const foldedNames = order.map((i) => folded[i]!);
  const platforms = new Uint8Array(size);
  const byId = new Map<string, number>();
  brands.forEach((brand, b) => {
    // Ranking ties fall back to the id, and lookups are by id: a duplicate would make both ambiguous, and
    // it can only come from a broken snapshot, which must not be served.
    if (byId.has(brand.id)) throw new Error(`duplicate brand id ${JSON.stringify(brand.id)} in the catalog`);
    byId.set(brand.id, b);
    platforms[b] = platformNumber(brand.platformType);
  });

  // Pass 1: every (token, field) occurrence, with provisional token numbers in order of first sight.
  const provisional = new Map<string, number>();
  const tokens: string[] = [];
  const occurrences: number[] = [];
  const brandStart = new Uint32Array(size + 1);
  const add = (list: readonly string[], field: number) => {
    for (const token of list) {
      let t = provisional.get(token);
      if (t === undefined) {
        t = tokens.length;
        provisional.set(token, t);
        tokens.push(token);
      }
      occurrences.push(t, field);
    }
  };
  for (let b = 0; b < size; b++) {
    const brand = brands[b]!;
    add(nameWords[order[b]!]!, FIELD_NAME);
    for (const alias of brand.aliases) add(words(alias), FIELD_ALIAS);
    if (brand.city) add(words(brand.city), FIELD_LOCATION);
    if (brand.state) add(locationWordsOfState(brand.state), FIELD_LOCATION);
    brandStart[b + 1] = occurrences.length / 2;
  }

  // Pass 2: renumber tokens in sorted order, so prefix ranges are contiguous.
  tokens.sort();
  const rank = new Uint32Array(tokens.length);
  tokens.forEach((token, r) => {
    rank[provisional.get(token)!] = r;
  });
  const nameLeads = new Uint32Array(NAME_LEADS * size).fill(NO_TOKEN);
  for (let b = 0; b < size; b++) {
    const own = nameWords[order[b]!]!;
    for (let i = 0; i < NAME_LEADS && i < own.length; i++)
      nameLeads[NAME_LEADS * b + i] = rank[provisional.get(own[i]!)!]!;
  }
  provisional.clear();

  // Pass 3: per brand, sort its (token, fields) pairs and merge repeats (a word in both the name and the
  // city), then count postings per token.
  const packed = new Uint32Array(occurrences.length / 2);
  for (let i = 0; i < packed.length; i++)
    packed[i] = (rank[occurrences[2 * i]!]! << FIELD_BITS) | occurrences[2 * i + 1]!;
  occurrences.length = 0;
  const brandTokenStart = new Uint32Array(size + 1);
  const brandTokens = new Uint32Array(packed.length);
  const brandTokenFields = new Uint8Array(packed.length);
  const postingStart = new Uint32Array(tokens.length + 1);
  let written = 0;
  for (let b = 0; b < size; b++) {
    const own = packed.subarray(brandStart[b], brandStart[b + 1]).sort();
    for (const pair of own) {
      const token = pair >>> FIELD_BITS;
      const fields = pair & ((1 << FIELD_BITS) - 1);
      if (written > brandTokenStart[b]! && brandTokens[written - 1] === token) {
        brandTokenFields[written - 1]! |= fields;
      } else {
        brandTokens[written] = token;
        brandTokenFields[written] = fields;
        written++;
        postingStart[token + 1]!++;
      }
    }
    brandTokenStart[b + 1] = written;
  }
  for (let t = 0; t < tokens.length; t++) postingStart[t + 1]! += postingStart[t]!;

  // Pass 4: fill postings brand by brand, so each token's list comes out ascending without a sort.
  const postings = new Uint32Array(written);
  const cursor = postingStart.slice(0, tokens.length);
  for (let b = 0; b < size; b++) {
    for (let i = brandTokenStart[b]!; i < brandTokenStart[b + 1]!; i++) postings[cursor[brandTokens[i]!]!++] = b;
  }

  return {
    brands,
    foldedNames,
    platforms,
    byId,
    tokens,
    postingStart,
    postings,
    brandTokenStart,
    // Trimmed copies: the merge may have written fewer pairs than it read.
    brandTokens: brandTokens.slice(0, written),
    brandTokenFields: brandTokenFields.slice(0, written),
    nameLeads,
  };
}

/** A state is found by its code ("ny") and by the words of its name ("new", "york"), whichever the brand gave. */
function locationWordsOfState(state: string): string[] {
  const code = stateCode(state);
  if (code === undefined) return words(state);
  return [code.toLowerCase(), ...words(stateName(code)!)];
}
