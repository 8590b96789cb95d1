// The favicon fallback for brands without usable artwork: the portal site's icon, else the FHIR host's.
// For a site, the icons its home page links (`<link rel="icon">`, `apple-touch-icon`; largest declared size
// first) and `/favicon.ico` are fetched through the same filtering agent with the same limits, and the one
// with the most pixels wins. Only bytes that sniff as an image and decode count.
import { largestIconImage } from './ico.js';
import { fetchForLogos, loadArtwork, type FetchLimits } from './load.js';
import { LogoError, sniffImageType, type ImageType } from './sniff.js';

/** Home pages are scanned for icon links in their first 512 KiB (the <head>). */
const MAX_PAGE_BYTES = 512 * 1024;
/** Linked icons tried per site, best first, until one is usable. */
const MAX_LINKED_TRIES = 3;

export interface IconLink {
  url: string;
  /** Declared edge in pixels; Infinity for `sizes="any"` (scalable), 0 when not declared. */
  size: number;
}

const ICON_RELS = new Set(['icon', 'apple-touch-icon', 'apple-touch-icon-precomposed']);
const ATTRIBUTE = /([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;

const decodeEntities = (value: string) =>
  value.replace(/&(amp|quot|apos|lt|gt|#(\d+)|#x([0-9a-f]+));/gi, (whole, name: string, dec?: string, hex?: string) => {
    if (dec || hex) return String.fromCodePoint(Math.min(0x10ffff, parseInt(dec ?? hex!, dec ? 10 : 16)));
    return ({ amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' } as Record<string, string>)[name.toLowerCase()] ?? whole;
  });

/** The icons a page links, largest declared first; hrefs resolved against the page's URL (or its <base>). */
export function iconLinks(html: string, pageUrl: URL): IconLink[] {
  const text = html.replace(/<!--[\s\S]*?-->/g, '');
  const baseHref = /<base\b[^>]*\bhref\s*=\s*["']?([^"'\s>]+)/i.exec(text)?.[1];
  let base = pageUrl;
  try {
    if (baseHref) base = new URL(decodeEntities(baseHref), pageUrl);
  } catch {
    // an unusable <base> is ignored
  }
  const links: IconLink[] = [];
  for (const [tag] of text.matchAll(/<link\b[^>]*>/gi)) {
    const attributes = new Map<string, string>();
    for (const m of tag.slice(5).matchAll(ATTRIBUTE)) attributes.set(m[1]!.toLowerCase(), decodeEntities(m[2] ?? m[3] ?? m[4] ?? ''));
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
    const declared = sizes.split(/\s+/).map((s) => (s === 'any' ? Infinity : Number(/^(\d+)x(\d+)$/.exec(s)?.[1] ?? 0)));
    const size = Math.max(0, ...declared, rels.some((rel) => rel.startsWith('apple-touch-icon')) ? 180 : 0);
    links.push({ url: url.href, size });
  }
  return links.sort((a, b) => b.size - a.size);
}

export interface Candidate {
  bytes: Buffer;
  type: ImageType;
  /** Pixels along the shorter edge (ICO: of its largest image); SVG counts as any size. */
  edge: number;
}

/** Sniffs and measures fetched icon bytes; undefined when they are not usable artwork. */
export async function inspect(bytes: Buffer, measure: (bytes: Buffer) => Promise<{ width: number; height: number }>): Promise<Candidate | undefined> {
  try {
    const type = sniffImageType(bytes);
    if (type === 'svg') return { bytes, type, edge: Infinity };
    const { width, height } = type === 'ico' ? largestIconImage(bytes) : await measure(bytes);
    return width > 0 && height > 0 ? { bytes, type, edge: Math.min(width, height) } : undefined;
  } catch {
    return undefined;
  }
}

/** The https origin of a portal or FHIR base URL (http is upgraded: nothing is fetched in clear text). */
export function siteOf(reference: string | null | undefined): URL | undefined {
  if (!reference) return undefined;
  try {
    const url = new URL(reference);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
    url.protocol = 'https:';
    url.hash = '';
    return url;
  } catch {
    return undefined;
  }
}

/**
 * The best icon of one site: `home` is the page scanned for links (a portal URL as given, or a FHIR host's
 * root); `/favicon.ico` is at its origin. Undefined when the site offers nothing usable.
 */
export async function siteFavicon(
  home: URL,
  limits: FetchLimits,
  measure: (bytes: Buffer) => Promise<{ width: number; height: number }>,
): Promise<Candidate | undefined> {
  const ico = fetchForLogos(new URL('/favicon.ico', home), limits, { accept: 'image/*' }).then(({ bytes }) => inspect(bytes, measure), () => undefined);
  const page = await fetchForLogos(home, { ...limits, maxBytes: Math.min(limits.maxBytes, MAX_PAGE_BYTES) }, { accept: 'text/html', truncate: true }).catch(() => undefined);
  const links = page ? iconLinks(page.bytes.toString('latin1'), page.url) : [];
  const fromLinks = (async () => {
    for (const link of links.slice(0, MAX_LINKED_TRIES)) {
      const found = await loadArtwork(link.url, limits).then((bytes) => inspect(bytes, measure), () => undefined);
      if (found) return found;
    }
    return undefined;
  })();
  const [linked, root] = await Promise.all([fromLinks, ico]);
  if (linked && root) return root.edge > linked.edge ? root : linked;
  return linked ?? root;
}

/** The portal's icon, else the FHIR host's; a LogoError when neither site has one. */
export async function findFavicon(
  sites: { portalUrl: string | null; fhirBaseUrl: string },
  limits: FetchLimits,
  measure: (bytes: Buffer) => Promise<{ width: number; height: number }>,
  cache: Map<string, Promise<Candidate | undefined>>,
): Promise<Candidate> {
  const portal = siteOf(sites.portalUrl);
  const fhir = siteOf(sites.fhirBaseUrl);
  const homes = [portal, fhir && new URL('/', fhir)].filter((u): u is URL => u !== undefined);
  const seen = new Set<string>();
  for (const home of homes) {
    if (seen.has(home.origin)) continue;
    seen.add(home.origin);
    // One lookup per site: many brands share a portal or FHIR host.
    let pending = cache.get(home.origin);
    if (!pending) cache.set(home.origin, (pending = siteFavicon(home, limits, measure)));
    const found = await pending;
    if (found) return found;
  }
  throw new LogoError('no-favicon', 'no usable favicon on the portal or FHIR host');
}
