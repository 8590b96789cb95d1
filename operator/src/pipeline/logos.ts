// Brand artwork for a snapshot: each brand's logo reference (`https:` or `data:`) is loaded, sniffed,
// rendered into PNG and WebP at every configured size and stored under content-addressed keys; when that
// fails or there is none and `faviconFallback` is on, the portal's (else the FHIR host's) favicon stands in.
// Keys derive from the source bytes and the rendering parameters, so artwork whose renditions are all in
// storage already is not rendered again. Fetches and renders run with bounded concurrency; the same
// reference, site or source bytes are handled once per run. Failures are counted by reason, never fatal:
// the brand is published without artwork. Parsing untrusted bytes (sniffing, SVG, ICO, a home page's links)
// runs in the artwork parser's worker threads under a deadline; overrunning it is the reason `parse-timeout`.
import pLimit, { type LimitFunction } from 'p-limit';
import { availableParallelism } from 'node:os';
import { LOGO_SIZES, type BrandLogo, type LogoFormat, type LogoSize } from '#core/catalog/model.js';
import type { ObjectStorage } from '#core/object-storage/types.js';
import { findFavicon, type Candidate, type Inspection } from './logos/favicon.js';
import { FetchError } from '#core/net/fetch.js';
import { LogoError } from './logos/errors.js';
import { LOGO_FETCH_LIMITS, loadArtwork, type FetchLimits } from './logos/load.js';
import { sharedArtworkParser, type ArtworkParser } from './logos/parser.js';
import { CONTENT_TYPES, LOGO_FORMATS, measureImage, renderArtwork, renditionKey, sha256 } from './logos/render.js';
import type { ImageType } from './logos/sniff.js';

export { decodeDataUrl, LOGO_FETCH_LIMITS, loadArtwork, type FetchLimits } from './logos/load.js';
export { largestIconImage } from './logos/ico.js';
export { iconLinks } from './logos/icon-links.js';
export {
  closeSharedArtworkParser,
  sharedArtworkParser,
  WorkerArtworkParser,
  type ArtworkParser,
} from './logos/parser.js';
export { MAX_INPUT_PIXELS, RENDERER_VERSION, renderArtwork, renderCounters, renditionKey } from './logos/render.js';
export { LogoError } from './logos/errors.js';
export { sniffImageType, type ImageType } from './logos/sniff.js';
export { inertSvg } from './logos/svg.js';

export interface LogoSettings {
  /** Sizes rendered (default: every catalog size). */
  sizes?: readonly LogoSize[];
  /** Use the portal's or FHIR host's favicon for brands without usable artwork (default false here; the BrandCatalog
   * spec defaults it to true). */
  faviconFallback?: boolean;
  /** Artworks rendered at once (CPU-bound); default: the available cores. */
  concurrency?: number;
  /** Brands whose artwork (or favicon) is fetched at once (I/O-bound: favicon look-ups wait on slow sites); default 8 ×
   * concurrency, at least 16. */
  fetchConcurrency?: number;
  limits?: Partial<FetchLimits>;
  /** Where untrusted bytes are parsed (default: the process's shared worker pool, 2 s deadline per parse). */
  parser?: ArtworkParser;
}

export interface LogoRequest {
  brandId: string;
  logoUrl?: string;
  portalUrl: string | null;
  fhirBaseUrl: string;
}

export interface LogoResults {
  logos: Map<string, BrandLogo>;
  /** Brands published with their own artwork. */
  rendered: number;
  /** Brands published with their site's favicon instead. */
  fallback: number;
  /** Brands whose logo reference could not be used (a favicon may still stand in). */
  failed: number;
  /** Distinct artworks: rendered in this run, or found complete in storage and reused. */
  artworks: { rendered: number; reused: number };
  /** Failures by reason (`too-large`, `unsupported-type`, `parse-timeout`, …); favicon look-ups that found nothing as
   * `favicon:<reason>`. */
  reasons: Record<string, number>;
  /** A few failures in words, for status messages. */
  errors: string[];
}

type Renditions = Pick<BrandLogo, 'assets' | 'webp'>;

const MAX_ERRORS = 10;

/** One storeLogos call: its settings, what it found, and the work it shares between brands. */
interface LogoRun {
  storage: ObjectStorage;
  sizes: LogoSize[];
  limits: FetchLimits;
  faviconFallback: boolean;
  /** At most `concurrency` renderings at once (p-limit). */
  renderGate: LimitFunction;
  /** The artwork parser, and sharp's measurements, for sniffing and looking at favicons. */
  inspection: Inspection;
  results: LogoResults;
  /** Renditions by logo reference, by source-bytes hash, and favicons by site: each handled once per run. */
  byReference: Map<string, Promise<Renditions>>;
  bySource: Map<string, Promise<Renditions>>;
  bySite: Map<string, Promise<Candidate | undefined>>;
}

export async function storeLogos(
  storage: ObjectStorage,
  requests: LogoRequest[],
  settings: LogoSettings = {},
): Promise<LogoResults> {
  const concurrency = Math.max(1, settings.concurrency ?? availableParallelism());
  const run: LogoRun = {
    storage,
    sizes: [...new Set(settings.sizes?.length ? settings.sizes : LOGO_SIZES)].sort((a, b) => a - b),
    limits: { ...LOGO_FETCH_LIMITS, ...settings.limits },
    faviconFallback: settings.faviconFallback ?? false,
    renderGate: pLimit(concurrency),
    inspection: { parser: settings.parser ?? sharedArtworkParser(), measure: measureImage },
    results: {
      logos: new Map(),
      rendered: 0,
      fallback: 0,
      failed: 0,
      artworks: { rendered: 0, reused: 0 },
      reasons: {},
      errors: [],
    },
    byReference: new Map(),
    bySource: new Map(),
    bySite: new Map(),
  };
  const queue = requests.filter((r) => r.logoUrl !== undefined || run.faviconFallback);
  await forEachConcurrently(queue, Math.max(1, settings.fetchConcurrency ?? Math.max(16, 8 * concurrency)), (request) =>
    logoForBrand(run, request),
  );
  return run.results;
}

/** The brand's own artwork, else (with the fallback on) its site's favicon; failures counted, never thrown. */
async function logoForBrand(run: LogoRun, request: LogoRequest): Promise<void> {
  if (request.logoUrl !== undefined) {
    try {
      run.results.logos.set(request.brandId, {
        kind: 'rendered',
        ...(await renditionsOfReference(run, request.logoUrl)),
      });
      run.results.rendered++;
      return;
    } catch (error) {
      run.results.failed++;
      countFailure(run, reasonOf(error), `${request.brandId}: ${(error as Error).message}`);
    }
  }
  if (!run.faviconFallback) return;
  try {
    const icon = await findFavicon(request, run.limits, run.inspection, run.bySite);
    run.results.logos.set(request.brandId, {
      kind: 'favicon',
      ...(await renditionsOfBytes(run, icon.bytes, icon.type)),
    });
    run.results.fallback++;
  } catch (error) {
    countFailure(run, `favicon:${reasonOf(error)}`);
  }
}

function renditionsOfReference(run: LogoRun, reference: string): Promise<Renditions> {
  let pending = run.byReference.get(reference);
  if (!pending)
    run.byReference.set(
      reference,
      (pending = loadArtwork(reference, run.limits).then((bytes) => renditionsOfBytes(run, bytes))),
    );
  return pending;
}

/** Renditions of source bytes, sniffed once (unless the type is known): reused when every key exists in storage, else
 * rendered and stored. */
function renditionsOfBytes(run: LogoRun, bytes: Buffer, known?: ImageType): Promise<Renditions> {
  const hash = sha256(bytes);
  let pending = run.bySource.get(hash);
  if (!pending) {
    const type = known !== undefined ? Promise.resolve(known) : run.inspection.parser.sniff(bytes);
    run.bySource.set(hash, (pending = type.then((sniffed) => renderOrReuse(run, bytes, sniffed, hash))));
  }
  return pending;
}

async function renderOrReuse(run: LogoRun, bytes: Buffer, type: ImageType, hash: string): Promise<Renditions> {
  const keys = run.sizes.flatMap((size) => LOGO_FORMATS.map((format) => renditionKey(hash, size, format)));
  const present = await Promise.all(
    keys.map((key) => storageCall(`checking the stored rendition`, () => run.storage.exists(key))),
  );
  if (present.every(Boolean)) {
    run.results.artworks.reused++;
  } else {
    const renditions = await run.renderGate(() => renderArtwork(bytes, type, run.sizes, run.inspection.parser));
    await Promise.all(
      renditions.map(({ size, format, body }) =>
        storageCall('storing the rendition', () =>
          run.storage.put(renditionKey(hash, size, format), body, CONTENT_TYPES[format]),
        ),
      ),
    );
    run.results.artworks.rendered++;
  }
  const byFormat = (format: LogoFormat) =>
    Object.fromEntries(
      LOGO_SIZES.map((size) => [`${size}`, renditionKey(hash, nearest(run.sizes, size), format)]),
    ) as BrandLogo['assets'];
  return { assets: byFormat('png'), webp: byFormat('webp') };
}

/** Object storage failing is counted apart (`storage`): publishing then would strip artwork from brands. */
async function storageCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw new LogoError('storage', `${what} failed: ${(error as Error).message}`);
  }
}

function countFailure(run: LogoRun, reason: string, message?: string): void {
  run.results.reasons[reason] = (run.results.reasons[reason] ?? 0) + 1;
  if (message !== undefined && run.results.errors.length < MAX_ERRORS) run.results.errors.push(message);
}

/** Runs `task` over `items` with at most `workers` at once, in order of start. */
async function forEachConcurrently<T>(items: T[], workers: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(workers, items.length) }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

/** The rendered size that stands in for `size`: itself, else the nearest larger, else the largest. */
const nearest = (rendered: LogoSize[], size: LogoSize): LogoSize =>
  rendered.find((s) => s >= size) ?? rendered[rendered.length - 1]!;

const reasonOf = (error: unknown): string =>
  error instanceof LogoError || error instanceof FetchError ? error.reason : 'internal';
