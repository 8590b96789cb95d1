// The regular expressions the artwork and source parsers used before they were rewritten as linear scans,
// kept as the reference the scans must agree with (on small generated inputs: on large hostile ones these
// backtrack for minutes). Copied as they were, with the code that used them.

const ATTRIBUTE = /([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;
const ICON_RELS = new Set(['icon', 'apple-touch-icon', 'apple-touch-icon-precomposed']);

const decodeEntities = (value: string) =>
  value.replace(/&(amp|quot|apos|lt|gt|#(\d+)|#x([0-9a-f]+));/gi, (whole, name: string, dec?: string, hex?: string) => {
    if (dec || hex) return String.fromCodePoint(Math.min(0x10ffff, parseInt(dec ?? hex!, dec ? 10 : 16)));
    return (
      ({ amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' } as Record<string, string>)[name.toLowerCase()] ?? whole
    );
  });

export function formerIconLinks(html: string, pageUrl: URL): { url: string; size: number }[] {
  const text = html.replace(/<!--[\s\S]*?-->/g, '');
  const baseHref = /<base\b[^>]*\bhref\s*=\s*["']?([^"'\s>]+)/i.exec(text)?.[1];
  let base = pageUrl;
  try {
    if (baseHref) base = new URL(decodeEntities(baseHref), pageUrl);
  } catch {
    // an unusable <base> is ignored
  }
  const links: { url: string; size: number }[] = [];
  for (const [tag] of text.matchAll(/<link\b[^>]*>/gi)) {
    const attributes = new Map<string, string>();
    for (const m of tag.slice(5).matchAll(ATTRIBUTE))
      attributes.set(m[1]!.toLowerCase(), decodeEntities(m[2] ?? m[3] ?? m[4] ?? ''));
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
    const sizes = (attributes.get('sizes') ?? '').toLowerCase();
    const declared = sizes
      .split(/\s+/)
      .map((s) => (s === 'any' ? Infinity : Number(/^(\d+)x(\d+)$/.exec(s)?.[1] ?? 0)));
    const size = Math.max(0, ...declared, rels.some((rel) => rel.startsWith('apple-touch-icon')) ? 180 : 0);
    links.push({ url: url.href, size });
  }
  return links.sort((a, b) => b.size - a.size);
}

const SVG_START = /^(?:\s|<\?xml\s[^>]*\?>|<!--(?:(?!-->)[\s\S])*-->|<!DOCTYPE\s+svg\b[^>[]*>)*<svg[\s>/]/;

/** The former SVG text check on already decoded text (UTF-8 decoding and the byte-order mark are unchanged). */
export function formerIsSvgText(text: string): boolean {
  // eslint-disable-next-line no-control-regex -- control characters are what tells binary from text here
  if (/[\u0000-\u0008\u000e-\u001f]/.test(text)) return false;
  if (!SVG_START.test(text)) return false;
  if (/<!ENTITY/i.test(text) || /<\?xml-stylesheet/i.test(text)) return false;
  return /<\/svg\s*>\s*(?:<!--(?:(?!-->)[\s\S])*-->\s*)*$/.test(text) || /^[\s\S]*?<svg\b[^>]*\/>\s*$/.test(text);
}

export const formerInertSvgText = (text: string): string =>
  text
    .replace(/(\b(?:xlink:)?href\s*=\s*)(["'])(?!\s*(?:#|data:))[^"']*\2/gi, '$1$2#$2')
    .replace(/url\(\s*(["']?)(?!\s*(?:#|data:))[^)]*\)/gi, 'none')
    .replace(/@import\b[^;]*;?/gi, '');

export function formerTypeAndId(reference: string): { type: string; id: string } | undefined {
  const tail = /([A-Za-z]+)\/([^/]+)(?:\/_history\/[^/]+)?$/.exec(reference);
  return tail === null ? undefined : { type: tail[1]!, id: tail[2]! };
}

export const formerWithoutTrailingSlashes = (path: string): string => path.replace(/\/+$/, '');

/** A deterministic generator (mulberry32), so a disagreement found once is found on every run. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const some = (random: Random, max: number, part: () => string, separator = ''): string =>
  Array.from({ length: Math.floor(random() * (max + 1)) }, part).join(separator);

/** Damages a well-formed text now and then: a token inserted, a character dropped, so near misses are tried too. */
function damaged(random: Random, text: string, noise: readonly string[]): string {
  let out = text;
  for (let n = Math.floor(random() * 3) - 1; n > 0; n--) {
    const at = Math.floor(random() * (out.length + 1));
    out =
      random() < 0.5 ? out.slice(0, at) + pick(random, noise) + out.slice(at) : out.slice(0, at) + out.slice(at + 1);
  }
  return out;
}

const SPACE = [' ', ' ', '\n', '\t', '  ', '\u00a0', '/'];
const ATTRIBUTES = [
  'rel=icon',
  'rel="icon"',
  "rel='apple-touch-icon'",
  'rel="shortcut icon"',
  'REL=ICON',
  'rel="apple-touch-icon-precomposed"',
  'rel=stylesheet',
  'href=/a.png',
  'href="https://cdn.example/b.png"',
  "href='c.png'",
  'href = "d.png"',
  'HREF=e.png',
  'data-href=f.png',
  'href="unclosed',
  "href='g.png?x=1&amp;y=2'",
  'href=http://plain.example/h.png',
  'href=data:image/png;base64,AA',
  'href=""',
  'href',
  'sizes="16x16 32x32"',
  'sizes=any',
  'sizes=48x48',
  'sizes="64X64"',
  'type="image/png"',
];
const HTML_NOISE = ['<', '>', '"', "'", '=', '<!--', '-->', '<!-->', '<link', '<base', ' ', '`', '&#47;', 'x'];

/** Pages of link and base tags, comments and text, some damaged. */
export function generatedPages(seed: number, count: number): string[] {
  const random = seeded(seed);
  const attributes = () => some(random, 4, () => pick(random, SPACE) + pick(random, ATTRIBUTES));
  const tag = (name: string) =>
    `${pick(random, [name, name.toUpperCase()])}${attributes()}${pick(random, ['>', '/>', ' >', ''])}`;
  const part = (): string =>
    pick(random, [
      () => tag('<link'),
      () => tag('<link'),
      () => tag('<base'),
      () =>
        `${pick(random, ['<!--', '<!--', '<!-->', '<!--->'])}${some(random, 2, () => tag('<link'))}${pick(random, ['-->', '--', ''])}`,
      () =>
        pick(random, [
          '<html><head>',
          '<title>x</title>',
          'text',
          '<script>"<link rel=icon href=s.png>"</script>',
          '\n',
        ]),
    ])();
  return Array.from({ length: count }, () => damaged(random, some(random, 6, part), HTML_NOISE));
}

const PROLOG = [
  ' ',
  '\n',
  '<?xml version="1.0"?>',
  '<?xml?>',
  '<?xml version="1.0">',
  '<!-- a -->',
  '<!-- <svg> -->',
  '<!-->',
  '<!DOCTYPE svg>',
  '<!DOCTYPE svg PUBLIC "x">',
  '<!DOCTYPE svg [<!ENTITY a "b">]>',
  '<!DOCTYPE html>',
  '\u3000',
];
const BODY = [
  '<rect/>',
  '<g></g>',
  '<image href="http://e.example/x.png"/>',
  "<image xlink:href='#local'/>",
  '<use href="data:image/png;base64,AA"/>',
  '<a href = "https://e.example/">',
  '<style>@import url(http://e.example/a.css); rect { fill: url(#g) } .a { fill: URL( "#q" ) } .b { mask: url(data:x) }</style>',
  'url(',
  ')',
  'text',
  '<!-- inside -->',
  '<svg/>',
  '</svg>',
  '<svgz',
  '<svg-a',
];
const ENDINGS = [
  '</svg>',
  '</svg >',
  '</svg\n>',
  '</svg>\n',
  '</svg><!-- end -->',
  '</svg> <!-- a --> <!-- b -->\n',
  '</svg><!--',
  '</svg>x',
  '/>',
  ' />\n',
  '</svg><!-- --> -->',
  '</svg><!-- </svg> -->',
  '</svg> <!-- </svg>\n',
  '</svg><!-- <!-- -->',
];
const SVG_NOISE = [
  '<',
  '>',
  '/',
  '"',
  "'",
  '<!--',
  '-->',
  '</svg>',
  '<svg',
  ' ',
  '<!ENTITY',
  '<?xml-stylesheet ?>',
  '\u0001',
];

/** SVG-like documents: a prolog, a root with content, an ending, some damaged. */
export function generatedSvgs(seed: number, count: number): string[] {
  const random = seeded(seed);
  return Array.from({ length: count }, () => {
    const root = pick(random, [
      '<svg>',
      '<svg xmlns="http://www.w3.org/2000/svg">',
      '<svg\nwidth="1">',
      '<svg/',
      '<svgx>',
      '<SVG>',
      '<svg ',
    ]);
    const text =
      some(random, 3, () => pick(random, PROLOG)) +
      root +
      some(random, 4, () => pick(random, BODY)) +
      pick(random, ENDINGS);
    return damaged(random, text, SVG_NOISE);
  });
}

/** `count` strings of up to `maxTokens` tokens drawn from `tokens`. */
export function generated(seed: number, count: number, maxTokens: number, tokens: readonly string[]): string[] {
  const random = seeded(seed);
  return Array.from({ length: count }, () => some(random, maxTokens, () => pick(random, tokens)));
}
