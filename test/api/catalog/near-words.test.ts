// The words within a few typing errors of a query word: the sorted-vocabulary walk agrees with a plain
// edit-distance table on every word of a random vocabulary, and counts a swap of adjacent letters as one.
import { expect } from 'chai';
import { allowedEdits, tokensNear } from '../../../api/src/catalog/search/near-words.js';

/** Optimal string alignment distance, the textbook table. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** A deterministic pseudo-random generator (the test must not depend on luck). */
function random(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

describe('catalog: words within a few typing errors', () => {
  it('allows no error under 4 letters, one up to 7, two from 8', () => {
    expect([3, 4, 7, 8, 12].map(allowedEdits)).to.deep.equal([0, 1, 1, 2, 2]);
  });

  it('counts a swap of adjacent letters, a missing, an extra and a wrong letter as one error each', () => {
    const tokens = ['general', 'massachusetts', 'medical', 'memorial', 'mercy', 'methodist'].sort();
    const near = (word: string, edits: number) => tokensNear(tokens, word, edits).map((i) => tokens[i]);
    expect(near('massachsuetts', 2)).to.deep.equal(['massachusetts']);
    expect(near('massachusets', 1)).to.deep.equal(['massachusetts']);
    expect(near('genreal', 1)).to.deep.equal(['general']);
    expect(near('memorail', 1)).to.deep.equal(['memorial']);
    expect(near('mercyy', 1)).to.deep.equal(['mercy']);
    expect(near('merdy', 1)).to.deep.equal(['mercy']);
    expect(near('medcal', 0)).to.deep.equal([]);
    expect(near('xyzzy', 2)).to.deep.equal([]);
  });

  it('finds exactly the words a full edit-distance table finds, over a random vocabulary', () => {
    const next = random(42);
    const letters = 'aeimnorst';
    const word = () => Array.from({ length: 2 + Math.floor(next() * 9) }, () => letters[Math.floor(next() * letters.length)]).join('');
    const tokens = [...new Set(Array.from({ length: 3_000 }, word))].sort();
    for (let q = 0; q < 120; q++) {
      // Half the queries are a vocabulary word with errors typed in, half are random.
      const base = q % 2 === 0 ? tokens[Math.floor(next() * tokens.length)]! : word();
      const typed = base.length > 3 && q % 4 === 0 ? base.slice(0, 1) + base[2] + base[1] + base.slice(3) : base;
      for (const edits of [0, 1, 2]) {
        const expected = tokens.flatMap((token, i) => (distance(token, typed) <= edits ? [i] : []));
        expect(tokensNear(tokens, typed, edits), `${typed} within ${edits}`).to.deep.equal(expected);
      }
    }
  });
});
