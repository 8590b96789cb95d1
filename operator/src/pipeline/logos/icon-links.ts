// The icons an HTML page links (`<link rel="icon">`, `apple-touch-icon`), found in time linear in the page.
// A hand-written scan rather than an HTML parser library: it needs three constructs (comments, <base>,
// <link>), and it reproduces exactly what the regular expressions it replaces found on every page (a test
// compares the two on generated pages), only without their backtracking, which let 512 KiB of hostile HTML
// block the event loop for minutes. htmlparser2 would be linear too, but would tokenise the whole document
// by the HTML standard's rules and change which links real pages yield (inside <script>, unclosed quotes).
// How the old patterns read, for reference: comments `<!--[\s\S]*?-->`, the base URL
// `<base\b[^>]*\bhref\s*=\s*["']?([^"'\s>]+)`, link tags `<link\b[^>]*>` and their attributes
// `([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?`.
import { boundaryAt, caselessAt, countSteps, find, findCaseless, isSpace, linearPass, skipSpaces } from './scan.js';

export interface IconLink {
  url: string;
  /** Declared edge in pixels; Infinity for `sizes="any"` (scalable), 0 when not declared. */
  size: number;
}

const ICON_RELS = new Set(['icon', 'apple-touch-icon', 'apple-touch-icon-precomposed']);

// One pass, no nested quantifiers: linear.
const decodeEntities = (value: string) =>
  linearPass(value).replace(
    /&(amp|quot|apos|lt|gt|#(\d+)|#x([0-9a-f]+));/gi,
    (whole, name: string, dec?: string, hex?: string) => {
      if (dec || hex) return String.fromCodePoint(Math.min(0x10ffff, parseInt(dec ?? hex!, dec ? 10 : 16)));
      return (
        ({ amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' } as Record<string, string>)[name.toLowerCase()] ?? whole
      );
    },
  );

/** The icons a page links, largest declared first; hrefs resolved against the page's URL (or its <base>). */
export function iconLinks(html: string, pageUrl: URL): IconLink[] {
  const text = withoutComments(html);
  const baseHref = baseHrefOf(text);
  let base = pageUrl;
  try {
    if (baseHref !== undefined) base = new URL(decodeEntities(baseHref), pageUrl);
  } catch {
    // an unusable <base> is ignored
  }
  const links: IconLink[] = [];
  for (const tag of linkTags(text)) {
    const attributes = attributesOf(tag);
    const rels = (attributes.get('rel') ?? '').toLowerCase().split(/\s+/);
    const href = attributes.get('href')?.trim();
    if (!href || !rels.some((rel) => ICON_RELS.has(rel))) continue;
    let url: URL;
    try {
      url = new URL(href, base);
    } catch {
      continue;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'data:') continue;
    let size = rels.some((rel) => rel.startsWith('apple-touch-icon')) ? 180 : 0;
    for (const declared of (attributes.get('sizes') ?? '').toLowerCase().split(/\s+/)) {
      size = Math.max(size, declared === 'any' ? Infinity : Number(/^(\d+)x(\d+)$/.exec(declared)?.[1] ?? 0));
    }
    links.push({ url: url.href, size });
  }
  return links.sort((a, b) => b.size - a.size);
}

/** The page without its comments; an unterminated `<!--` stays, as no `-->` follows it (nor any later one). */
function withoutComments(html: string): string {
  const kept: string[] = [];
  let from = 0;
  for (let at = find(html, '<!--', 0); at >= 0; at = find(html, '<!--', from)) {
    const end = find(html, '-->', at + 4);
    if (end < 0) break;
    kept.push(html.slice(from, at));
    from = end + 3;
  }
  kept.push(html.slice(from));
  return kept.join('');
}

/**
 * The raw href of the first `<base` tag that has one: within the tag (up to the first `>`), the last
 * `href` after a non-word character followed by `=` and a value of at least one character, quotes excluded.
 */
function baseHrefOf(text: string): string | undefined {
  for (let at = findCaseless(text, '<base', 0); at >= 0;) {
    if (at + 5 >= text.length || !boundaryAt(text, at + 5)) {
      at = findCaseless(text, '<base', at + 1);
      continue;
    }
    const close = find(text, '>', at + 5);
    const end = close < 0 ? text.length : close;
    const href = lastHrefIn(text, at + 5, end);
    if (href !== undefined) return href;
    // Any later `<base` before `end` ends at the same `>`: its part of the tag is a suffix of this one's.
    at = close < 0 ? -1 : findCaseless(text, '<base', end);
  }
  return undefined;
}

/** Candidates from the right: the first that qualifies is the one a greedy `[^>]*` would have reached. */
function lastHrefIn(text: string, from: number, end: number): string | undefined {
  countSteps(end - from);
  for (let at = end - 4; at >= from; at--) {
    if (!caselessAt(text, 'href', at) || !boundaryAt(text, at - 1)) continue;
    let value = skipSpaces(text, at + 4);
    if (text[value] !== '=') continue;
    value = skipSpaces(text, value + 1);
    if (text[value] === '"' || text[value] === "'") value++;
    let stop = value;
    while (stop < end && isBaseHrefChar(text.charCodeAt(stop))) stop++;
    if (stop > value) return text.slice(value, stop);
  }
  return undefined;
}

const isBaseHrefChar = (code: number) => code !== 0x22 && code !== 0x27 && code !== 0x3e && !isSpace(code);

/** Each `<link` tag up to its first `>`, without the `<link`; none after a `<link` that no `>` follows. */
function linkTags(text: string): string[] {
  const tags: string[] = [];
  for (let at = findCaseless(text, '<link', 0); at >= 0;) {
    if (!boundaryAt(text, at + 5)) {
      at = findCaseless(text, '<link', at + 1);
      continue;
    }
    const close = find(text, '>', at + 5);
    if (close < 0) break;
    tags.push(text.slice(at + 5, close + 1));
    at = findCaseless(text, '<link', close + 1);
  }
  return tags;
}

const NAME_STOPS = new Set(['"', "'", '=', '<', '>', '/']);
const UNQUOTED_STOPS = new Set(['"', "'", '=', '<', '>', '`']);
const isNameChar = (text: string, at: number) => !NAME_STOPS.has(text[at]!) && !isSpace(text.charCodeAt(at));
const isUnquotedChar = (text: string, at: number) => !UNQUOTED_STOPS.has(text[at]!) && !isSpace(text.charCodeAt(at));

/**
 * Attribute names (lower-cased) and entity-decoded values; a later attribute of the same name wins. A value
 * whose quote is never closed is no value: the name gets '' and scanning resumes after the name.
 */
function attributesOf(tag: string): Map<string, string> {
  const attributes = new Map<string, string>();
  // Once a quote has no closing partner after some point, no later one of that kind has: search no more.
  const unclosedFrom: Record<string, number> = { '"': Infinity, "'": Infinity };
  let at = 0;
  while (at < tag.length) {
    if (!isNameChar(tag, at)) {
      at++;
      continue;
    }
    const start = at;
    while (at < tag.length && isNameChar(tag, at)) at++;
    const name = tag.slice(start, at).toLowerCase();
    let value: string | undefined;
    let next = at;
    let v = skipSpaces(tag, at);
    if (tag[v] === '=') {
      v = skipSpaces(tag, v + 1);
      const quote = tag[v];
      if (quote === '"' || quote === "'") {
        const close = v + 1 >= unclosedFrom[quote]! ? -1 : find(tag, quote, v + 1);
        if (close < 0) unclosedFrom[quote] = Math.min(unclosedFrom[quote]!, v + 1);
        else [value, next] = [tag.slice(v + 1, close), close + 1];
      } else if (v < tag.length && isUnquotedChar(tag, v)) {
        let stop = v;
        while (stop < tag.length && isUnquotedChar(tag, stop)) stop++;
        [value, next] = [tag.slice(v, stop), stop];
      }
    }
    attributes.set(name, decodeEntities(value ?? ''));
    at = next;
  }
  linearPass(tag);
  return attributes;
}
