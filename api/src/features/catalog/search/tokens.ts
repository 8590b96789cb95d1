// A brand's words against a query's (index.ts): the range of token ids a query word is a prefix of (and the ranges of
// all of a query's words), whether and in which fields a brand has every word (its tier), and the fallback's rank by
// total edits. Each brand's token ids are ascending (layout.ts), so each check is a walk or a binary search over
// them.
import { FIELD_ALIAS, FIELD_NAME, NAME_LEADS, type IndexLayout } from './layout.js';

/** Ranks within a phase: tiers 0–3, and for the fallback up to 15 edits × 4 tiers. */
export const TIERS = 4;
export const MAX_RANKED_EDITS = 15;
/** How many ranks a phase has: a ranking key (index.ts) holds the rank below this, under the distance near a point. */
export const RANKS = (MAX_RANKED_EDITS + 1) * TIERS;
// Below this many tokens a linear walk of a brand's tokens beats a binary search.
const LINEAR_SCAN_MAX = 32;

/** [lo, hi): the ids of the tokens that start with prefix, by two binary searches over the sorted tokens. */
export function prefixRange(layout: IndexLayout, prefix: string): [number, number] {
  const tokens = layout.tokens;
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

/** [lo, hi) token ranges of every term; `complete` when every term starts some indexed word. */
export function prefixRanges(
  layout: IndexLayout,
  terms: readonly string[],
): { lo: Uint32Array; hi: Uint32Array; complete: boolean } {
  const lo = new Uint32Array(terms.length);
  const hi = new Uint32Array(terms.length);
  let complete = true;
  terms.forEach((term, i) => {
    const [from, to] = prefixRange(layout, term);
    lo[i] = from;
    hi[i] = to;
    if (from === to) complete = false;
  });
  return { lo, hi, complete };
}

/**
 * The query's words as the start of a name (tier 0): the folded name starts with them joined by one space exactly
 * when each word before the last is the name's word at its place and the last starts the name's word at its place.
 * The first NAME_LEADS of those are checked on token ids (layout.nameLeads); only a longer query reads the name.
 */
export interface Phrase {
  text: string;
  words: number;
  /** Per leading name word checked: the token ids it must be within, [from, to). */
  from: number[];
  to: number[];
}

/** The typed words as a Phrase, from the [lo, hi) token ranges of their distinct terms. */
export function phraseOf(
  layout: IndexLayout,
  typed: readonly string[],
  terms: readonly string[],
  lo: Uint32Array,
  hi: Uint32Array,
): Phrase {
  const from: number[] = [];
  const to: number[] = [];
  for (let i = 0; i < typed.length && i < NAME_LEADS; i++) {
    const term = terms.indexOf(typed[i]!);
    if (i === typed.length - 1) {
      from.push(lo[term]!);
      to.push(hi[term]!);
    } else {
      // A word before the last is a whole name word: its own token, the first of its range when it is one.
      const whole = lo[term]! < hi[term]! && layout.tokens[lo[term]!] === typed[i];
      from.push(lo[term]!);
      to.push(whole ? lo[term]! + 1 : lo[term]!);
    }
  }
  return { text: typed.join(' '), words: typed.length, from, to };
}

/** Brand b's folded name starts with the phrase. */
export function startsWithPhrase(layout: IndexLayout, b: number, phrase: Phrase): boolean {
  const leads = layout.nameLeads;
  for (let i = 0; i < phrase.from.length; i++) {
    const token = leads[NAME_LEADS * b + i]!;
    if (token < phrase.from[i]! || token >= phrase.to[i]!) return false;
  }
  return phrase.words <= NAME_LEADS || layout.foldedNames[b]!.startsWith(phrase.text);
}

/**
 * 1, 2 or 3 (see the header) when every query word matches some field of brand b, else -1. Tier 0 is
 * decided by the caller. Each word is checked against the brand's own ascending token ids.
 */
export function tierOf(
  layout: IndexLayout,
  b: number,
  lo: Uint32Array,
  hi: Uint32Array,
  checkOrder: readonly number[],
): number {
  const { brandTokenStart, brandTokens, brandTokenFields } = layout;
  const first = brandTokenStart[b]!;
  const last = brandTokenStart[b + 1]!;
  let allInName = true;
  let allInNameOrAlias = true;
  for (const w of checkOrder) {
    const to = hi[w]!;
    let fields = 0;
    // A brand merged from thousands of rows (one shared multi-tenant URL) has as many tokens: skip to the
    // range by binary search rather than walking every one of them for every query that reaches it.
    for (let i = firstTokenAtLeast(layout, first, last, lo[w]!); i < last; i++) {
      const token = brandTokens[i]!;
      if (token >= to) break; // ascending: no later token can be in range
      fields |= brandTokenFields[i]!;
    }
    if (fields === 0) return -1;
    if ((fields & FIELD_NAME) === 0) {
      allInName = false;
      if ((fields & FIELD_ALIAS) === 0) allInNameOrAlias = false;
    }
  }
  return allInName ? 1 : allInNameOrAlias ? 2 : 3;
}

/** edits × TIERS + tier for brand b, or -1 when some term matches none of its words. */
export function fuzzyRank(
  layout: IndexLayout,
  b: number,
  lo: Uint32Array,
  hi: Uint32Array,
  nearIds: Uint32Array[],
  nearEdits: Uint8Array[],
): number {
  const { brandTokenStart, brandTokens, brandTokenFields } = layout;
  const first = brandTokenStart[b]!;
  const last = brandTokenStart[b + 1]!;
  let total = 0;
  let allInName = true;
  let allInNameOrAlias = true;
  for (let w = 0; w < lo.length; w++) {
    let best = Infinity;
    let fields = 0;
    // Exact prefix first: it costs no edit.
    for (let i = firstTokenAtLeast(layout, first, last, lo[w]!); i < last && brandTokens[i]! < hi[w]!; i++) {
      best = 0;
      fields |= brandTokenFields[i]!;
    }
    if (best > 0) {
      const ids = nearIds[w]!;
      for (let k = 0; k < ids.length; k++) {
        const e = nearEdits[w]![k]!;
        if (e > best) continue;
        const i = firstTokenAtLeast(layout, first, last, ids[k]!);
        if (i === last || brandTokens[i] !== ids[k]) continue;
        if (e < best) {
          best = e;
          fields = 0;
        }
        fields |= brandTokenFields[i]!;
      }
    }
    if (best === Infinity) return -1;
    total += best;
    if ((fields & FIELD_NAME) === 0) {
      allInName = false;
      if ((fields & FIELD_ALIAS) === 0) allInNameOrAlias = false;
    }
  }
  const tier = allInName ? 1 : allInNameOrAlias ? 2 : 3;
  return total === 0 ? tier : Math.min(total, MAX_RANKED_EDITS) * TIERS + tier;
}

/** The first position in brandTokens[first, last) whose token id is ≥ token. */
export function firstTokenAtLeast(layout: IndexLayout, first: number, last: number, token: number): number {
  const brandTokens = layout.brandTokens;
  let i = first;
  if (last - first > LINEAR_SCAN_MAX) {
    let end = last;
    while (i < end) {
      const mid = (i + end) >>> 1;
      if (brandTokens[mid]! < token) i = mid + 1;
      else end = mid;
    }
    return i;
  }
  while (i < last && brandTokens[i]! < token) i++;
  return i;
}
