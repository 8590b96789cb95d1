// The SVG text check and the inert copy sharp renders, in time linear in the document. The regular
// expressions they replace backtracked: an SVG made of repeated `</svg><!--` cost 4× per doubling (minutes at
// the 2 MiB limit). Accepted: UTF-8 text without binary control characters whose prolog (white space, an XML
// declaration, comments, a DOCTYPE without internal subset) is followed by <svg>, without entity declarations
// or style sheet processing instructions, that ends with </svg> (or a self-closing root) and then nothing but
// white space and comments. The scans below accept exactly what those expressions accepted; the comments name
// the expression each replaces.
import { LogoError } from './errors.js';
import { boundaryAt, caselessAt, countSteps, find, findCaseless, isSpace, linearPass, skipSpaces } from './scan.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function svgText(bytes: Buffer): string | undefined {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return undefined; // not UTF-8 text
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  // Single character classes and literals: one pass each, no backtracking.
  // eslint-disable-next-line no-control-regex -- control characters are what tells binary from text here
  if (/[\u0000-\u0008\u000e-\u001f]/.test(linearPass(text))) return undefined; // binary, not text
  if (!startsWithSvgRoot(text)) return undefined;
  if (/<!ENTITY/i.test(linearPass(text)) || /<\?xml-stylesheet/i.test(linearPass(text))) return undefined; // entity expansion, external style sheets
  if (!closesRoot(text) && !isSelfClosingRoot(text)) return undefined;
  return text;
}

export const looksLikeSvg = (bytes: Buffer): boolean => svgText(bytes) !== undefined;

/**
 * `^(?:\s|<\?xml\s[^>]*\?>|<!--(?:(?!-->)[\s\S])*-->|<!DOCTYPE\s+svg\b[^>[]*>)*<svg[\s>/]`: the prolog items
 * start differently and each can end in one place only, so reading them greedily is the only way to match.
 */
function startsWithSvgRoot(text: string): boolean {
  let at = 0;
  for (;;) {
    const next = skipSpaces(text, at);
    if (next > at) at = next;
    else if (text.startsWith('<?xml', at) && at + 5 < text.length && isSpace(text.charCodeAt(at + 5))) {
      const close = find(text, '>', at + 6);
      if (close < at + 7 || text[close - 1] !== '?') return false;
      at = close + 1;
    } else if (text.startsWith('<!--', at)) {
      const close = find(text, '-->', at + 4);
      if (close < 0) return false;
      at = close + 3;
    } else if (text.startsWith('<!DOCTYPE', at) && at + 9 < text.length && isSpace(text.charCodeAt(at + 9))) {
      const name = skipSpaces(text, at + 9);
      if (!text.startsWith('svg', name) || !boundaryAt(text, name + 3)) return false;
      let close = name + 3;
      while (close < text.length && text[close] !== '>' && text[close] !== '[') close++;
      countSteps(close - name);
      if (text[close] !== '>') return false;
      at = close + 1;
    } else break;
  }
  return (
    text.startsWith('<svg', at) &&
    at + 4 < text.length &&
    (isSpace(text.charCodeAt(at + 4)) || text[at + 4] === '>' || text[at + 4] === '/')
  );
}

/**
 * `<\/svg\s*>\s*(?:<!--(?:(?!-->)[\s\S])*-->\s*)*$`: some `</svg>` is followed only by white space and
 * comments. Whether the text from each position on is only that is worked out once, right to left, so each
 * `</svg>` costs a look-up rather than a scan to the end (the expression's rescans were quadratic).
 */
function closesRoot(text: string): boolean {
  const n = text.length;
  const tail = new Uint8Array(n + 1); // tail[i]: text from i on is white space and complete comments only
  tail[n] = 1;
  let close = -1; // the first `-->` at or after i + 4: where a comment opened at i ends
  for (let i = n - 1; i >= 0; i--) {
    if (text.startsWith('-->', i + 4)) close = i + 4;
    if (isSpace(text.charCodeAt(i))) tail[i] = tail[i + 1]!;
    else if (close >= 0 && text.startsWith('<!--', i)) tail[i] = tail[close + 3]!;
  }
  countSteps(n);
  for (let at = find(text, '</svg', 0); at >= 0; at = find(text, '</svg', at + 5)) {
    const end = skipSpaces(text, at + 5);
    if (text[end] === '>' && tail[end + 1] === 1) return true;
  }
  return false;
}

/** `^[\s\S]*?<svg\b[^>]*\/>\s*$`: the text ends (white space aside) with `/>` closing a `<svg` tag. */
function isSelfClosingRoot(text: string): boolean {
  let last = text.length - 1;
  while (last >= 0 && isSpace(text.charCodeAt(last))) last--;
  countSteps(text.length - 1 - last);
  if (last < 1 || text[last] !== '>' || text[last - 1] !== '/') return false;
  const previous = text.lastIndexOf('>', last - 1); // the tag's `<svg` comes after it
  countSteps(last - previous);
  for (let at = find(text, '<svg', previous + 1); at >= 0 && at + 4 <= last - 1; at = find(text, '<svg', at + 1)) {
    if (boundaryAt(text, at + 4)) return true;
  }
  return false;
}

// References that leave the document: href/xlink:href values and CSS url()/@import other than `#fragment`
// and `data:`. librsvg refuses them anyway when it has no base URL (sharp passes SVG as a buffer); they are
// neutralised as well, so no version or build of the renderer can be made to fetch or read anything.
// Linear: a match can start only at `href`, and each start scans only to the next quote (which ends any
// earlier start's scan); `@import` matches consume what they scan.
const EXTERNAL_HREF = /(\b(?:xlink:)?href\s*=\s*)(["'])(?!\s*(?:#|data:))[^"']*\2/gi;
const CSS_IMPORT = /@import\b[^;]*;?/gi;

/** The SVG as rendered: validated again, external references replaced by inert ones. */
export function inertSvg(bytes: Buffer): Buffer {
  const text = svgText(bytes);
  if (text === undefined) throw new LogoError('unsupported-type', 'the logo is not an SVG document');
  const inert = withoutExternalCssUrls(linearPass(text).replace(EXTERNAL_HREF, '$1$2#$2'));
  return Buffer.from(linearPass(inert).replace(CSS_IMPORT, ''), 'utf8');
}

/**
 * `url\(\s*(["']?)(?!\s*(?:#|data:))[^)]*\)` → `none`, case-insensitively: every `url(` up to the first `)`
 * unless what follows `url(` (white space aside) starts `#` or `data:`. A quoted `"#id"` is replaced as well,
 * as the expression did (its optional quote backtracks). No `)` after one `url(` means none after any later.
 */
function withoutExternalCssUrls(text: string): string {
  const kept: string[] = [];
  let from = 0;
  for (let at = findCaseless(text, 'url(', 0); at >= 0;) {
    const target = skipSpaces(text, at + 4);
    if (text[target] === '#' || caselessAt(text, 'data:', target)) {
      at = findCaseless(text, 'url(', at + 1);
      continue;
    }
    const close = find(text, ')', at + 4);
    if (close < 0) break;
    kept.push(text.slice(from, at), 'none');
    from = close + 1;
    at = findCaseless(text, 'url(', from);
  }
  kept.push(text.slice(from));
  return kept.join('');
}
