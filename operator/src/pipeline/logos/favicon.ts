// The favicon fallback for brands without usable artwork: the portal site's icon, else the FHIR host's.
// For a site, the icons its home page links (`<link rel="icon">`, `apple-touch-icon`; largest declared size
// first) and `/favicon.ico` are fetched through the same filtering agent with the same limits, and the one
// with the most pixels wins. Only bytes that sniff as an image and decode count.
// Every parse of the fetched bytes (the page's links, sniffing, ICO directories) runs in the artwork parser's
// workers (parser.ts); sharp measures the rest off the event loop as well.
import { LogoError } from './errors.js';
import { fetchForLogos, loadArtwork, type FetchLimits } from './load.js';
import { PARSER_FAILURES } from './parse-pool.js';
import type { ArtworkParser } from './parser.js';
import type { ImageType } from './sniff.js';

export { iconLinks, type IconLink } from './icon-links.js';

/** Home pages are scanned for icon links in their first 512 KiB (the <head>). */
const MAX_PAGE_BYTES = 512 * 1024;
/** Linked icons tried per site, best first, until one is usable. */
const MAX_LINKED_TRIES = 3;

export interface Candidate {
  bytes: Buffer;
  type: ImageType;
  /** Pixels along the shorter edge (ICO: of its largest image); SVG counts as any size. */
  edge: number;
}

/** How candidates are looked at: the artwork parser, and sharp for the dimensions of raster images. */
export interface Inspection {
  parser: ArtworkParser;
  measure: (bytes: Buffer) => Promise<{ width: number; height: number }>;
}

/**
 * Sniffs and measures fetched icon bytes; undefined when they are not usable artwork. When the parser itself
 * gave up on them (`parse-timeout`, `parse-failed`) that LogoError is thrown: it says why a site had no icon.
 */
export async function inspect(bytes: Buffer, { parser, measure }: Inspection): Promise<Candidate | undefined> {
  try {
    const type = await parser.sniff(bytes);
    if (type === 'svg') return { bytes, type, edge: Infinity };
    const { width, height } = type === 'ico' ? await parser.iconSize(bytes) : await measure(bytes);
    return width > 0 && height > 0 ? { bytes, type, edge: Math.min(width, height) } : undefined;
  } catch (error) {
    if (error instanceof LogoError && PARSER_FAILURES.has(error.reason)) throw error;
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
  inspection: Inspection,
): Promise<Candidate | undefined> {
  // The parser failing on a page or a candidate skips it; when nothing usable is found, it is the reason.
  const failures: unknown[] = [];
  const failed =
    <T>(fallback: T) =>
    (error: unknown) => (failures.push(error), fallback);
  const look = (bytes: Buffer) => inspect(bytes, inspection).catch(failed(undefined));
  const ico = fetchForLogos(new URL('/favicon.ico', home), limits, { accept: 'image/*' }).then(
    ({ bytes }) => look(bytes),
    () => undefined,
  );
  const page = await fetchForLogos(
    home,
    { ...limits, maxBytes: Math.min(limits.maxBytes, MAX_PAGE_BYTES) },
    { accept: 'text/html', truncate: true },
  ).catch(() => undefined);
  const links = page ? await inspection.parser.iconLinks(page.bytes, page.url).catch(failed([])) : [];
  const fromLinks = (async () => {
    for (const link of links.slice(0, MAX_LINKED_TRIES)) {
      const found = await loadArtwork(link.url, limits).then(look, () => undefined);
      if (found) return found;
    }
    return undefined;
  })();
  const [linked, root] = await Promise.all([fromLinks, ico]);
  const best = linked && root ? (root.edge > linked.edge ? root : linked) : (linked ?? root);
  if (best === undefined && failures.length > 0) throw failures[0];
  return best;
}

/** The portal's icon, else the FHIR host's; a LogoError when neither site has one. */
export async function findFavicon(
  sites: { portalUrl: string | null; fhirBaseUrl: string },
  limits: FetchLimits,
  inspection: Inspection,
  cache: Map<string, Promise<Candidate | undefined>>,
): Promise<Candidate> {
  const portal = siteOf(sites.portalUrl);
  const fhir = siteOf(sites.fhirBaseUrl);
  const homes = [portal, fhir && new URL('/', fhir)].filter((u): u is URL => u !== undefined);
  const seen = new Set<string>();
  let failure: unknown;
  for (const home of homes) {
    if (seen.has(home.origin)) continue;
    seen.add(home.origin);
    // One lookup per site: many brands share a portal or FHIR host.
    let pending = cache.get(home.origin);
    if (!pending) cache.set(home.origin, (pending = siteFavicon(home, limits, inspection)));
    const found = await pending.catch((error: unknown) => void (failure ??= error));
    if (found) return found;
  }
  if (failure instanceof Error) throw failure;
  throw new LogoError('no-favicon', 'no usable favicon on the portal or FHIR host');
}
