// The indexed words within a few typing errors of a query word, for the catalog's typo-tolerant fallback.
// Errors are counted as optimal string alignment (OSA) over UTF-16 code units: an inserted, deleted
// or replaced character, or two adjacent characters swapped, each count as one.
//
// The rule, as docs/api.md states it: a word of 4–7 letters may be 1 error from an
// indexed word, one of 8 or more 2, a shorter word none; and an error in the first letter counts as two, as in
// Meilisearch's typo tolerance. People seldom mistype the letter they start with, and a 1-error budget spent
// there turns "rampa" into "tampa". A token's cost is therefore its distance, plus one when its first letter
// differs from the word's, and it is reported when the cost is within the word's allowance:
// - 1 allowed: the tokens that start with the word's first letter and are 1 error away;
// - 2 allowed: those that start with it and are 1 or 2 errors away, and those 1 error away that start with
//   another letter. That one error must have changed the first letter, so it is one of four: the first letter
//   replaced, a letter inserted before it, the first letter deleted, or the first two swapped.
//
// The rule is also what makes the lookup cheap. The tokens form a trie, laid out in pre-order in typed arrays
// (a node's subtree is the range of nodes up to end[node]), and a query walks only the subtree of its first
// letter, computing one row of the OSA table per node and skipping a subtree as soon as no token in it can be
// within reach: every cell of the row is over the allowance once the length difference still to cover is
// added, given the shortest and longest token below. Only the cells within `allowance` of the diagonal can
// stay within it, so a row is 2 × allowance + 1 cells whatever the word's length. The four other-first-letter
// variants are exact lookups: two (first letter deleted, first two swapped) by descending the trie, and two
// (first letter replaced or inserted, by any letter) by binary search in the tokens sorted by everything after
// their first letter.

/** Errors allowed for a query word of `length` letters: none under 4, 1 up to 7, 2 from 8. */
export function allowedEdits(length: number): number {
  return length < 4 ? 0 : length < 8 ? 1 : 2;
}

// The most errors any word is allowed. find's lookups of other first letters assume it is 2 (with the
// penalty, one error there and no other); a larger allowance would need a walk of those letters too.
const MOST_EDITS = allowedEdits(Infinity);
/** The most cells a row of the walk keeps: the diagonal and MOST_EDITS either side. */
const MAX_BAND = 2 * MOST_EDITS + 1;

/** The vocabulary's words near a query word (see the header). Built once per snapshot; find is not reentrant. */
export class NearWords {
  private constructor(
    private readonly tokens: readonly string[],
    /** Per node, in pre-order (node 0 is the root, the empty prefix): the code unit that leads to it… */
    private readonly unit: Uint16Array,
    /** …its depth (the length of its prefix)… */
    private readonly depth: Uint32Array,
    /** …the end of its subtree (exclusive)… */
    private readonly end: Uint32Array,
    /** …the id of the token that ends there, or -1… */
    private readonly tokenAt: Int32Array,
    /** …and the lengths of the shortest and longest token in its subtree. */
    private readonly minLength: Uint32Array,
    private readonly maxLength: Uint32Array,
    /** Token ids ordered by the token without its first code unit (the empty token first). */
    private readonly byTail: Uint32Array,
    /** Scratch for find: the walk's rows of the OSA table and the code units on its path, by depth. */
    private readonly rows: Uint8Array,
    private readonly path: Uint16Array,
  ) {}

  /** From the index's tokens: distinct, sorted by UTF-16 code units (layout.tokens). */
  static build(sortedTokens: readonly string[]): NearWords {
    let nodes = 1;
    let longest = 0;
    for (let i = 0; i < sortedTokens.length; i++) {
      const token = sortedTokens[i]!;
      const previous = i > 0 ? sortedTokens[i - 1]! : '';
      // The trie and the binary searches below rely on the order: a vocabulary out of order is a bug upstream.
      if (i > 0 && !(previous < token))
        throw new TypeError(
          `tokens not sorted and distinct at ${i}: ${JSON.stringify(previous)}, ${JSON.stringify(token)}`,
        );
      nodes += token.length - sharedPrefix(previous, token);
      longest = Math.max(longest, token.length);
    }
    const unit = new Uint16Array(nodes);
    const depth = new Uint32Array(nodes);
    const end = new Uint32Array(nodes);
    const tokenAt = new Int32Array(nodes).fill(-1);
    const minLength = new Uint32Array(nodes).fill(0xffffffff);
    const maxLength = new Uint32Array(nodes);
    // onPath[d]: the node of depth d on the path of the token being added.
    const onPath = new Uint32Array(longest + 1);
    let count = 1;
    let previous = '';
    sortedTokens.forEach((token, id) => {
      const shared = sharedPrefix(previous, token);
      // The previous token's nodes below the shared prefix are complete.
      for (let d = shared + 1; d <= previous.length; d++) end[onPath[d]!] = count;
      for (let d = shared + 1; d <= token.length; d++) {
        unit[count] = token.charCodeAt(d - 1);
        depth[count] = d;
        onPath[d] = count++;
      }
      tokenAt[onPath[token.length]!] = id;
      for (let d = 0; d <= token.length; d++) {
        const node = onPath[d]!;
        minLength[node] = Math.min(minLength[node]!, token.length);
        maxLength[node] = Math.max(maxLength[node]!, token.length);
      }
      previous = token;
    });
    for (let d = 0; d <= previous.length; d++) end[onPath[d]!] = count;
    const byTail = Uint32Array.from(sortedTokens.keys()).sort((a, b) =>
      compareFrom(sortedTokens[a]!, 1, sortedTokens[b]!, 1),
    );
    return new NearWords(
      sortedTokens,
      unit,
      depth,
      end,
      tokenAt,
      minLength,
      maxLength,
      byTail,
      new Uint8Array((longest + 1) * MAX_BAND),
      new Uint16Array(longest + 1),
    );
  }

  /**
   * Appends to `ids`/`edits` the token ids within the allowed edits of `word` (at least 1: the word itself is
   * not reported), each with its edits under the rule above. `word` is folded (core/src/catalog/fold.ts).
   */
  find(word: string, ids: number[], edits: number[]): void {
    const allowance = allowedEdits(word.length);
    if (allowance === 0) return;
    const first = this.childOf(0, word.charCodeAt(0));
    if (first >= 0) this.walk(first, word, allowance, ids, edits);
    if (allowance < 2) return;
    // One error that changed the first letter: with the penalty, 2. A variant that keeps the first letter
    // (deleting one of two equal first letters, say) was found by the walk, at its true cost.
    const lead = word.charCodeAt(0);
    const tail = word.slice(1);
    const other = (id: number) => {
      if (this.tokens[id]!.charCodeAt(0) === lead) return;
      ids.push(id);
      edits.push(2);
    };
    this.forEachWithTail(tail, other); // first letter replaced
    this.forEachWithTail(word, other); // a letter inserted before it
    const deleted = this.idOf(tail);
    if (deleted >= 0) other(deleted);
    if (word.charCodeAt(1) !== lead) {
      const swapped = this.idOf(word[1]! + word[0]! + word.slice(2));
      if (swapped >= 0) other(swapped);
    }
  }

  /** Reports the tokens below `start` (a child of the root) within `allowance` of `word`, and not equal to it. */
  private walk(start: number, word: string, allowance: number, ids: number[], edits: number[]): void {
    const { unit, depth, end, tokenAt, minLength, maxLength, rows, path } = this;
    const m = word.length;
    const over = allowance + 1;
    // Cell o of row d is column j = d - allowance + o: the columns further from the diagonal are over.
    const band = 2 * allowance + 1;
    // Row 0: the empty prefix is j errors from the word's first j letters.
    for (let o = 0; o < band; o++) {
      const j = o - allowance;
      rows[o] = j < 0 || j > m ? over : Math.min(j, over);
    }
    const stop = end[start]!;
    let node = start;
    while (node < stop) {
      const d = depth[node]!;
      const c = unit[node]!;
      path[d] = c;
      const row = d * band;
      const above = row - band;
      let reachable = false;
      const restMin = minLength[node]! - d;
      const restMax = maxLength[node]! - d;
      for (let o = 0; o < band; o++) {
        const j = d - allowance + o;
        let cell = over;
        if (j === 0) cell = Math.min(d, over);
        else if (j > 0 && j <= m) {
          cell = rows[above + o]! + (c === word.charCodeAt(j - 1) ? 0 : 1);
          if (o + 1 < band) cell = Math.min(cell, rows[above + o + 1]! + 1);
          if (o > 0) cell = Math.min(cell, rows[row + o - 1]! + 1);
          if (d > 1 && j > 1 && c === word.charCodeAt(j - 2) && path[d - 1] === word.charCodeAt(j - 1))
            cell = Math.min(cell, rows[above - band + o]! + 1);
          if (cell > over) cell = over;
        }
        rows[row + o] = cell;
        // Some token below may still come within the allowance from this cell: the m - j letters left of the
        // word against its rest of restMin…restMax letters cost at least the difference in length.
        if (cell <= allowance) {
          const slack = allowance - cell;
          if (m - j - slack <= restMax && m - j + slack >= restMin) reachable = true;
        }
      }
      if (!reachable) {
        node = end[node]!;
        continue;
      }
      const id = tokenAt[node]!;
      const o = m - d + allowance;
      if (id >= 0 && o >= 0 && o < band) {
        const distance = rows[row + o]!;
        if (distance > 0 && distance <= allowance) {
          ids.push(id);
          edits.push(distance);
        }
      }
      node++;
    }
  }

  /** The child of `node` reached by code unit `c`, or -1. */
  private childOf(node: number, c: number): number {
    for (let child = node + 1; child < this.end[node]!; child = this.end[child]!)
      if (this.unit[child] === c) return child;
    return -1;
  }

  /** The id of `token`, or -1. */
  private idOf(token: string): number {
    let node = 0;
    for (let d = 0; d < token.length && node >= 0; d++) node = this.childOf(node, token.charCodeAt(d));
    return node < 0 ? -1 : this.tokenAt[node]!;
  }

  /** Calls `found` with each token whose rest after its first code unit is `tail`. */
  private forEachWithTail(tail: string, found: (id: number) => void): void {
    const { tokens, byTail } = this;
    let lo = 0;
    let hi = byTail.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareFrom(tokens[byTail[mid]!]!, 1, tail, 0) < 0) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < byTail.length; i++) {
      if (compareFrom(tokens[byTail[i]!]!, 1, tail, 0) !== 0) break;
      found(byTail[i]!);
    }
  }
}

function sharedPrefix(a: string, b: string): number {
  const limit = Math.min(a.length, b.length);
  let i = 0;
  while (i < limit && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** Code-unit order of a.slice(from) and b.slice(bFrom), without slicing. */
function compareFrom(a: string, from: number, b: string, bFrom: number): number {
  const aLength = Math.max(0, a.length - from);
  const bLength = b.length - bFrom;
  const limit = Math.min(aLength, bLength);
  for (let i = 0; i < limit; i++) {
    const difference = a.charCodeAt(from + i) - b.charCodeAt(bFrom + i);
    if (difference !== 0) return difference;
  }
  return aLength - bLength;
}
