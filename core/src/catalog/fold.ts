// Text folding shared by the brand search index and its queries. Both sides must fold identically, or a
// query could never reach a word it visibly contains: keep every rule here and nowhere else.

// Apostrophes join rather than separate ("Mary's" → "marys", "O’Connor" → "oconnor"): people type the
// possessive without one far more often than with it. ‘ and ´ are the usual mistyped and autocorrected forms.
const APOSTROPHES = /['’‘ʼ`´]/g;
// Combining marks left by NFKD: stripping them makes "São José" → "sao jose".
const MARKS = /\p{M}+/gu;
// Everything that is not a letter or a digit separates words ("P.C." → "p", "c"; "Wrist & Elbow" → two words).
const SEPARATORS = /[^\p{L}\p{N}]+/u;
const ASCII_SEPARATORS = /[^a-z0-9]+/;
// Brand names are overwhelmingly ASCII; skipping NFKD for them keeps index builds fast.
// eslint-disable-next-line no-control-regex -- the range is every ASCII character, control characters included
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * Lower-cases, removes diacritics and compatibility forms (ligatures, full-width letters) and drops
 * apostrophes. Word separators are kept as they were: `words` splits on them.
 */
export function fold(text: string): string {
  // Lower-casing first lets NFKD decompose what lower-casing produced ("İ" → "i" + U+0307).
  const lower = text.toLowerCase().replace(APOSTROPHES, '');
  if (!NON_ASCII.test(lower)) return lower;
  // A second apostrophe pass: NFKD turns full-width and other compatibility apostrophes into "'".
  return lower.normalize('NFKD').replace(MARKS, '').replace(APOSTROPHES, '');
}

/** The folded words of a text, in order, without empty strings. */
export function words(text: string): string[] {
  const folded = fold(text);
  const parts = folded.split(NON_ASCII.test(folded) ? SEPARATORS : ASCII_SEPARATORS);
  // split leaves empty strings at the ends when the text starts or ends with a separator.
  if (parts.length > 0 && parts[0] === '') parts.shift();
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  return parts;
}
