// Brand artwork for a snapshot: each brand's logo reference (`https:` or `data:`) is loaded, sniffed,
// rendered into PNG and WebP at every configured size and stored under content-addressed keys; when that
// fails or there is none and `faviconFallback` is on, the portal's (else the FHIR host's) favicon stands in.
// Keys derive from the source bytes and the rendering parameters, so artwork whose renditions are all in
// storage already is not rendered again. Fetches and renders run with bounded concurrency; the same
// reference, site or source bytes are handled once per run. Failures are counted by reason, never fatal:
// the brand is published without artwork.
import { availableParallelism } from 'node:os';
import { LOGO_SIZES, type BrandLogo, type LogoFormat, type LogoSize } from '../../../core/src/catalog/model.js';
import type { ObjectStorage } from '../../../core/src/object-storage/types.js';
import { findFavicon, type Candidate } from './logos/favicon.js';
import { FetchError } from '../../../core/src/net/fetch.js';
import { LOGO_FETCH_LIMITS, loadArtwork, type FetchLimits } from './logos/load.js';
import { CONTENT_TYPES, LOGO_FORMATS, measureImage, renderArtwork, renditionKey, sha256 } from './logos/render.js';
import { LogoError, sniffImageType } from './logos/sniff.js';

export { decodeDataUrl, LOGO_FETCH_LIMITS, loadArtwork, type FetchLimits } from './logos/load.js';
export { largestIconImage } from './logos/ico.js';
export { iconLinks } from './logos/favicon.js';
export { MAX_INPUT_PIXELS, RENDERER_VERSION, renderArtwork, renderCounters, renditionKey } from './logos/render.js';
export { inertSvg, LogoError, sniffImageType, type ImageType } from './logos/sniff.js';

export interface LogoSettings {
  /** Sizes rendered (default: every catalog size). */
  sizes?: readonly LogoSize[];
  /** Use the portal's or FHIR host's favicon for brands without usable artwork (default false here; the BrandCatalog spec defaults it to true). */
  faviconFallback?: boolean;
  /** Artworks rendered at once (CPU-bound); default: the available cores. */
  concurrency?: number;
  /** Brands whose artwork (or favicon) is fetched at once (I/O-bound: favicon look-ups wait on slow sites); default 8 × concurrency, at least 16. */
  fetchConcurrency?: number;
  limits?: Partial<FetchLimits>;
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
  /** Failures by reason (`too-large`, `unsupported-type`, …); favicon look-ups that found nothing as `favicon:<reason>`. */
  reasons: Record<string, number>;
  /** A few failures in words, for status messages. */
  errors: string[];
}

type Renditions = Pick<BrandLogo, 'assets' | 'webp'>;

const MAX_ERRORS = 10;

/** A counting semaphore: at most `limit` holders at once. */
class Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

export async function storeLogos(storage: ObjectStorage, requests: LogoRequest[], settings: LogoSettings = {}): Promise<LogoResults> {
  const sizes = [...new Set(settings.sizes?.length ? settings.sizes : LOGO_SIZES)].sort((a, b) => a - b);
  const limits: FetchLimits = { ...LOGO_FETCH_LIMITS, ...settings.limits };
  const concurrency = Math.max(1, settings.concurrency ?? availableParallelism());
  const renderGate = new Gate(concurrency);
  const results: LogoResults = { logos: new Map(), rendered: 0, fallback: 0, failed: 0, artworks: { rendered: 0, reused: 0 }, reasons: {}, errors: [] };
  const byReference = new Map<string, Promise<Renditions>>();
  const bySource = new Map<string, Promise<Renditions>>();
  const bySite = new Map<string, Promise<Candidate | undefined>>();

  const fail = (reason: string, message: string) => {
    results.reasons[reason] = (results.reasons[reason] ?? 0) + 1;
    if (results.errors.length < MAX_ERRORS) results.errors.push(message);
  };

  /** Renditions of sniffed source bytes: reused when every key exists, else rendered and stored. */
  const store = (bytes: Buffer): Promise<Renditions> => {
    const type = sniffImageType(bytes);
    const hash = sha256(bytes);
    let pending = bySource.get(hash);
    if (!pending) {
      pending = (async () => {
        const keyed = sizes.flatMap((size) => LOGO_FORMATS.map((format) => ({ size, format, key: renditionKey(hash, size, format) })));
        const present = await Promise.all(
          keyed.map(({ key }) =>
            storage.exists(key).catch((error: Error) => {
              throw new LogoError('storage', `checking the stored rendition failed: ${error.message}`);
            }),
          ),
        );
        if (present.every(Boolean)) {
          results.artworks.reused++;
        } else {
          const renditions = await renderGate.run(() => renderArtwork(bytes, type, sizes));
          await Promise.all(renditions.map(({ size, format, body }) => storage.put(renditionKey(hash, size, format), body, CONTENT_TYPES[format]).catch((error: Error) => {
            throw new LogoError('storage', `storing the rendition failed: ${error.message}`);
          })));
          results.artworks.rendered++;
        }
        const key = (size: LogoSize, format: LogoFormat) => renditionKey(hash, nearest(sizes, size), format);
        const byFormat = (format: LogoFormat) => Object.fromEntries(LOGO_SIZES.map((size) => [`${size}`, key(size, format)])) as BrandLogo['assets'];
        return { assets: byFormat('png'), webp: byFormat('webp') };
      })();
      bySource.set(hash, pending);
    }
    return pending;
  };

  const fromReference = (reference: string): Promise<Renditions> => {
    let pending = byReference.get(reference);
    if (!pending) byReference.set(reference, (pending = loadArtwork(reference, limits).then(store)));
    return pending;
  };

  const handle = async (request: LogoRequest) => {
    if (request.logoUrl !== undefined) {
      try {
        results.logos.set(request.brandId, { kind: 'rendered', ...(await fromReference(request.logoUrl)) });
        results.rendered++;
        return;
      } catch (error) {
        results.failed++;
        fail(reasonOf(error), `${request.brandId}: ${(error as Error).message}`);
      }
    }
    if (!settings.faviconFallback) return;
    try {
      const icon = await findFavicon(request, limits, measureImage, bySite);
      results.logos.set(request.brandId, { kind: 'favicon', ...(await store(icon.bytes)) });
      results.fallback++;
    } catch (error) {
      const reason = `favicon:${reasonOf(error)}`;
      results.reasons[reason] = (results.reasons[reason] ?? 0) + 1;
    }
  };

  const queue = requests.filter((r) => r.logoUrl !== undefined || settings.faviconFallback);
  const workers = Math.max(1, settings.fetchConcurrency ?? Math.max(16, 8 * concurrency));
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(workers, queue.length) }, async () => {
      while (next < queue.length) await handle(queue[next++]!);
    }),
  );
  return results;
}

/** The rendered size that stands in for `size`: itself, else the nearest larger, else the largest. */
const nearest = (rendered: LogoSize[], size: LogoSize): LogoSize => rendered.find((s) => s >= size) ?? rendered[rendered.length - 1]!;

const reasonOf = (error: unknown): string => (error instanceof LogoError || error instanceof FetchError ? error.reason : 'internal');
