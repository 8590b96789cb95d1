// The indexed words within a few typing errors of a query word, for the catalog's forgiving search (issue 12,
// not yet wired into BrandSearchIndex). Errors are counted as optimal string alignment: an inserted, deleted
// or replaced character, or two adjacent characters swapped, each count as one.
//
// The tokens are sorted, so they form an implicit trie: consecutive tokens share their common prefix, and the
// rows of the edit-distance table computed for that prefix are reused. When every cell of a prefix's row
// exceeds the allowed errors, no word with that prefix can match, and the walk jumps past all of them by
// binary search. A query thus reads the prefixes within reach of the word, not the whole vocabulary.

/** Errors allowed for a query word of `length` letters: none under 4, 1 up to 7, 2 from 8 (issue 12). */
export function allowedEdits(length: number): number {
  return length < 4 ? 0 : length < 8 ? 1 : 2;
}

/** Ids (ascending) of the tokens within `maxEdits` of `word`; `tokens` sorted by UTF-16 code units. */
export function tokensNear(tokens: readonly string[], word: string, maxEdits: number): number[] {
  const found: number[] = [];
  const m = word.length;
  if (tokens.length === 0) return found;
  const width = m + 1;
  // rows[d * width + j]: the distance between the first d characters of the current token and the first j of
  // the word. Row 0 is the distance from the empty prefix.
  let depthCapacity = 32;
  let rows = new Int32Array((depthCapacity + 1) * width);
  for (let j = 0; j <= m; j++) rows[j] = j;
  let previous = '';
  let i = 0;
  while (i < tokens.length) {
    const token = tokens[i]!;
    if (token.length > depthCapacity) {
      const grown = new Int32Array((token.length + 1) * width);
      grown.set(rows);
      rows = grown;
      depthCapacity = token.length;
    }
    // Rows up to the prefix this token shares with the previous one are already computed.
    let shared = 0;
    const limit = Math.min(previous.length, token.length);
    while (shared < limit && previous.charCodeAt(shared) === token.charCodeAt(shared)) shared++;
    let pruneAt = -1;
    for (let d = shared + 1; d <= token.length; d++) {
      const c = token.charCodeAt(d - 1);
      const row = d * width;
      const above = row - width;
      rows[row] = d;
      let best = d;
      for (let j = 1; j <= m; j++) {
        const w = word.charCodeAt(j - 1);
        let cell = Math.min(rows[above + j]! + 1, rows[row + j - 1]! + 1, rows[above + j - 1]! + (c === w ? 0 : 1));
        if (d > 1 && j > 1 && c === word.charCodeAt(j - 2) && token.charCodeAt(d - 2) === w) cell = Math.min(cell, rows[above - width + j - 2]! + 1);
        rows[row + j] = cell;
        if (cell < best) best = cell;
      }
      if (best > maxEdits) {
        pruneAt = d;
        break;
      }
    }
    previous = token;
    if (pruneAt < 0) {
      if (rows[token.length * width + m]! <= maxEdits) found.push(i);
      i++;
      continue;
    }
    // No token that starts with this prefix can come within maxEdits: skip them all.
    // The rows up to pruneAt - 1 stay valid for the next token only if it shares that much; `previous`
    // keeps the shared-prefix computation honest (row pruneAt holds this token's values).
    previous = token.slice(0, pruneAt - 1);
    i = endOfPrefix(tokens, token.slice(0, pruneAt), i + 1);
  }
  return found;
}

/** The first index from `from` on whose token does not start with `prefix` (tokens sorted). */
function endOfPrefix(tokens: readonly string[], prefix: string, from: number): number {
  let lo = from;
  let hi = tokens.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (tokens[mid]!.startsWith(prefix)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The vocabulary's words near a query word (see the header). */
export class NearWords {
  private constructor(private readonly tokens: readonly string[]) {}

  static build(sortedTokens: readonly string[]): NearWords {
    return new NearWords(sortedTokens);
  }

  /** Appends the ids of the tokens within the allowed edits of `word` (not the word itself), with their edit counts. */
  find(word: string, ids: number[], edits: number[]): void {
    const max = allowedEdits(word.length);
    if (max === 0) return;
    for (const id of tokensNear(this.tokens, word, max)) {
      const token = this.tokens[id]!;
      if (token === word) continue;
      ids.push(id);
      edits.push(osa(token, word));
    }
  }
}

function osa(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}
