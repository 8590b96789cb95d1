// The primitives the artwork parsers (icon links, the SVG check) scan untrusted text with, each in time
// linear in the characters it passes. Regular expressions that backtrack made 512 KiB of hostile HTML cost
// minutes; these never look at a character twice except where a caller says why. Every character passed is
// counted in `scanCounters.steps`, so tests can show the work grows in proportion to the input instead of
// timing it.

/** Characters examined by the scanners in this thread (tests read it). */
export const scanCounters = { steps: 0 };

/** JavaScript's `\s`: ASCII and Unicode white space, line terminators and the byte-order mark. */
export function isSpace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** JavaScript's `\w` without the u flag. */
export const isWordChar = (code: number): boolean =>
  (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f;

/** A `\b` after the word character just before `at` (the end of the text counts as a boundary). */
export const boundaryAt = (text: string, at: number): boolean => at >= text.length || !isWordChar(text.charCodeAt(at));

const lower = (code: number) => (code >= 0x41 && code <= 0x5a ? code | 0x20 : code);

/** Whether `needle` (lower-case ASCII) is at `at`, ignoring ASCII case as a regular expression's i flag does. */
export function caselessAt(text: string, needle: string, at: number): boolean {
  if (at < 0 || at + needle.length > text.length) return false;
  for (let i = 0; i < needle.length; i++) if (lower(text.charCodeAt(at + i)) !== needle.charCodeAt(i)) return false;
  return true;
}

/** The next `needle` at or after `from`, -1 when there is none. */
export function find(text: string, needle: string, from: number): number {
  const at = text.indexOf(needle, from);
  scanCounters.steps += Math.max(0, (at < 0 ? text.length : at) - from);
  return at;
}

/**
 * The next `needle` (lower-case ASCII with at least one character that is not a letter) at or after `from`,
 * ignoring ASCII case; -1 when there is none. The search runs on that character, then compares the rest.
 */
export function findCaseless(text: string, needle: string, from: number): number {
  const k = [...needle].findIndex((c) => !/[a-z]/.test(c));
  if (k < 0) throw new Error(`findCaseless needs a needle with a character that is not a letter: ${needle}`);
  for (let at = find(text, needle[k]!, from + k); at >= 0; at = find(text, needle[k]!, at + 1)) {
    if (caselessAt(text, needle, at - k)) return at - k;
  }
  return -1;
}

/** The first character at or after `from` that is not white space (`text.length` when none). */
export function skipSpaces(text: string, from: number): number {
  let at = from;
  while (at < text.length && isSpace(text.charCodeAt(at))) at++;
  scanCounters.steps += at - from;
  return at;
}

/** Counts a whole pass over `text` by a regular expression that is linear by construction (no nested quantifiers over
 * the same characters). */
export function linearPass(text: string): string {
  countSteps(text.length);
  return text;
}

/** Counts characters a caller's own loop examined. */
export function countSteps(characters: number): void {
  scanCounters.steps += Math.max(0, characters);
}
