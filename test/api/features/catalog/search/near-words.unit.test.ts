// The words within a few typing errors of a query word: NearWords agrees with a plain edit-distance table and
// the first-letter rule on every query over the fixture lists' vocabulary and random ones, and the rule's edges hold.
import { expect } from 'chai';
import { allowedEdits, NearWords } from '../../../../../api/src/features/catalog/search/near-words.js';
import { buildLayout } from '../../../../../api/src/features/catalog/search/layout.js';
import { loadRealBrands } from './real-brands.js';
import { typo } from '../../../../../testkit/synthetic-brands.js';
import { osaDistance } from '../../../../../testkit/osa.js';

/** The rule written the plain way: "token edits", sorted, for every token within the word's allowance. */
function bruteForce(tokens: readonly string[], word: string): string[] {
  const allowance = allowedEdits(word.length);
  return tokens
    .flatMap((token) => {
      // The distance is at least the difference in length: skipping those only saves time.
      if (Math.abs(token.length - word.length) > allowance) return [];
      const d = osaDistance(word, token);
      const cost = d + (token[0] === word[0] ? 0 : 1);
      return d > 0 && cost <= allowance ? [`${token} ${cost}`] : [];
    })
    .sort();
}

function near(index: NearWords, tokens: readonly string[], word: string): string[] {
  const ids: number[] = [];
  const edits: number[] = [];
  index.find(word, ids, edits);
  expect(ids).to.have.lengthOf(edits.length);
  return ids.map((id, k) => `${tokens[id]} ${edits[k]}`).sort();
}

/** A deterministic pseudo-random generator (the test must not depend on luck). */
function random(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

/** Vocabulary words with one or two errors, words of the vocabulary as they are, and random words. */
function queriesFor(
  tokens: readonly string[],
  next: () => number,
  letters: readonly string[],
  count: number,
): string[] {
  const long = tokens.filter((t) => t.length >= 3);
  return Array.from({ length: count }, (_, q) => {
    if (q % 10 === 9)
      return Array.from(
        { length: 3 + Math.floor(next() * 12) },
        () => letters[Math.floor(next() * letters.length)],
      ).join('');
    const word = long[Math.floor(next() * long.length)]!;
    if (q % 10 === 8) return word;
    const once = typo(next, word, 0, letters);
    return q % 2 === 0 ? typo(next, once, 0, letters) : once;
  });
}

function expectBruteForceAgreement(tokens: readonly string[], queries: readonly string[]): void {
  const index = NearWords.build(tokens);
  let found = 0;
  for (const word of queries) {
    const expected = bruteForce(tokens, word);
    expect(near(index, tokens, word), word).to.deep.equal(expected);
    found += expected.length;
  }
  // A vocabulary where nothing is ever near would prove nothing.
  expect(found).to.be.greaterThan(queries.length / 4);
}

describe('catalog: words within a few typing errors', () => {
  const vocabulary = [
    'aardvark',
    'ardvark',
    'general',
    'generals',
    'massachusetts',
    'medical',
    'memorial',
    'mercy',
    'methodist',
    'tampa',
  ].sort();
  const small = NearWords.build(vocabulary);
  const find = (word: string) => near(small, vocabulary, word);

  it('allows no error under 4 letters, one up to 7, two from 8', () => {
    expect([0, 3, 4, 7, 8, 12].map(allowedEdits)).to.deep.equal([0, 0, 1, 1, 2, 2]);
  });

  it('counts a swap of adjacent letters, a missing, an extra and a wrong letter as one error each', () => {
    expect(find('genreal')).to.deep.equal(['general 1']);
    expect(find('memorail')).to.deep.equal(['memorial 1']);
    expect(find('mercyy')).to.deep.equal(['mercy 1']);
    expect(find('merdy')).to.deep.equal(['mercy 1']);
    expect(find('medcal')).to.deep.equal(['medical 1']);
    expect(find('massachsuetts')).to.deep.equal(['massachusetts 1']);
  });

  it('gives words under 4 letters nothing, 4 to 7 letters one error and 8 or more two', () => {
    expect(find('tpa')).to.deep.equal([]);
    expect(find('tmpa')).to.deep.equal(['tampa 1']);
    // 7 letters: two errors are one too many; 8 letters: two are allowed.
    expect(find('gnereal')).to.deep.equal([]);
    expect(find('menorail')).to.deep.equal(['memorial 2']);
    expect(find('massachusets')).to.deep.equal(['massachusetts 1']);
    expect(find('masachusets')).to.deep.equal(['massachusetts 2']);
    expect(find('masachuset')).to.deep.equal([]);
  });

  it('counts an error in the first letter as two', () => {
    expect(find('rampa')).to.deep.equal([]);
    expect(find('jassachusetts')).to.deep.equal(['massachusetts 2']);
    expect(find('amssachusetts')).to.deep.equal(['massachusetts 2']);
    expect(find('assachusetts')).to.deep.equal(['massachusetts 2']);
    expect(find('nmassachusetts')).to.deep.equal(['massachusetts 2']);
    expect(find('jassachusets')).to.deep.equal([]);
    // Deleting one of two equal first letters leaves the first letter as it was: one error.
    expect(find('aardvark')).to.deep.equal(['ardvark 1']);
    expect(find('ardvarks')).to.deep.equal(['aardvark 2', 'ardvark 1']);
  });

  it('does not report the word itself, only the words around it', () => {
    expect(find('general')).to.deep.equal(['generals 1']);
    expect(find('generals')).to.deep.equal(['general 1']);
  });

  it('finds nothing in an empty vocabulary, and refuses one out of order', () => {
    expect(near(NearWords.build([]), [], 'massachusetts')).to.deep.equal([]);
    expect(() => NearWords.build(['mercy', 'medical'])).to.throw(TypeError);
    expect(() => NearWords.build(['mercy', 'mercy'])).to.throw(TypeError);
  });

  it('agrees with the rule written the plain way over the fixture lists’ vocabulary', () => {
    const tokens = buildLayout(loadRealBrands()).tokens;
    expect(tokens.length).to.be.greaterThan(2000);
    expectBruteForceAgreement(tokens, queriesFor(tokens, random(7), [...'abcdefghijklmnopqrstuvwxyz0123456789'], 300));
  });

  it('agrees with the rule written the plain way over random vocabularies, crowded and sparse', () => {
    // Few letters make many near words; the last alphabet has letters folding keeps (ø, ß) and one outside
    // the Basic Multilingual Plane, two UTF-16 code units that count as two characters, as in the index.
    for (const [seed, alphabet, size] of [
      [42, 'aeimnorst', 3_000],
      [43, 'abcdefghijklmnopqrstuvwxyz', 10_000],
      [44, 'aeiøßn\u{20000}', 2_000],
    ] as const) {
      const next = random(seed);
      const letters = [...alphabet];
      const word = () =>
        Array.from({ length: 1 + Math.floor(next() * 13) }, () => letters[Math.floor(next() * letters.length)]).join(
          '',
        );
      const tokens = [...new Set(Array.from({ length: size }, word))].sort();
      expectBruteForceAgreement(tokens, queriesFor(tokens, next, letters, 150));
    }
  });
});
