// Brand artwork: fetched once (`data:` URLs decoded, `https:` URLs fetched through an SSRF-filtering agent
// with size and time limits), rendered by sharp into square transparent PNGs at every catalog size, and
// stored under content-addressed keys, so an unchanged logo costs nothing on the next import.
import { createHash } from 'node:crypto';
import { get as httpsGet } from 'node:https';
import { RequestFilteringHttpsAgent } from 'request-filtering-agent';
import sharp from 'sharp';
import { LOGO_SIZES, type BrandLogo } from '../../../api/src/catalog/model.js';
import type { ObjectStorage } from '../../../api/src/infra/object-storage/types.js';

export const MAX_LOGO_BYTES = 2 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 10_000;
/** Decoding bombs stop here: no source artwork needs more than 4096 × 4096 pixels. */
const MAX_INPUT_PIXELS = 4096 * 4096;

const filteringAgent = new RequestFilteringHttpsAgent({ allowPrivateIPAddress: false, allowMetaIPAddress: false });

export class LogoError extends Error {}

/** Decodes a `data:` URL (base64 or percent-encoded). */
export function decodeDataUrl(url: string): Buffer {
  const match = /^data:([^,]*?)(;base64)?,(.*)$/s.exec(url);
  if (!match) throw new LogoError('malformed data: URL');
  const body = match[2] ? Buffer.from(match[3]!, 'base64') : Buffer.from(decodeURIComponent(match[3]!), 'utf8');
  if (body.length > MAX_LOGO_BYTES) throw new LogoError(`logo larger than ${MAX_LOGO_BYTES} bytes`);
  return body;
}

/** GET over https only, refusing private/loopback/link-local destinations (checked at connect time). */
export function fetchLogo(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (!url.startsWith('https://')) return reject(new LogoError('logo URLs must use https or data:'));
    const request = httpsGet(url, { agent: filteringAgent, timeout: FETCH_TIMEOUT_MS, headers: { accept: 'image/*' } }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        return reject(new LogoError(`logo fetch answered ${response.statusCode}`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_LOGO_BYTES) {
          request.destroy(new LogoError(`logo larger than ${MAX_LOGO_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      response.on('end', () => resolve(Buffer.concat(chunks)));
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new LogoError('logo fetch timed out')));
    request.on('error', (error) => reject(error instanceof LogoError ? error : new LogoError(`logo fetch failed: ${error.message}`)));
  });
}

export async function loadLogoSource(url: string): Promise<Buffer> {
  return url.startsWith('data:') ? decodeDataUrl(url) : fetchLogo(url);
}

/** Renders every catalog size as a square PNG, the artwork centred on a transparent background. */
export async function renderLogo(source: Buffer): Promise<Map<number, Buffer>> {
  const input = sharp(source, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error' });
  const meta = await input.metadata().catch(() => {
    throw new LogoError('the logo is not an image sharp can read');
  });
  const rendered = new Map<number, Buffer>();
  for (const size of LOGO_SIZES) {
    // Vector artwork is rasterised at a density that gives at least `size` pixels, so it stays crisp.
    const density = meta.format === 'svg' ? Math.min(2400, Math.max(72, Math.ceil((72 * size) / Math.max(1, Math.min(meta.width ?? size, meta.height ?? size))))) : undefined;
    const png = await sharp(source, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error', ...(density && { density }) })
      .resize(size, size, { fit: 'contain', background: { r: 0, g: 0, b: 0, alpha: 0 } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    rendered.set(size, png);
  }
  return rendered;
}

export const assetKey = (png: Buffer): string => `logo-${createHash('sha256').update(png).digest('hex').slice(0, 40)}.png`;

/** Renders and stores a logo; returns the brand's artwork record. */
export async function storeLogo(storage: ObjectStorage, source: Buffer, kind: BrandLogo['kind']): Promise<BrandLogo> {
  const rendered = await renderLogo(source);
  const assets = {} as BrandLogo['assets'];
  for (const [size, png] of rendered) {
    const key = assetKey(png);
    await storage.put(key, png, 'image/png');
    assets[`${size}` as keyof BrandLogo['assets']] = key;
  }
  return { kind, assets };
}

/**
 * Logos for many brands with bounded concurrency; the same source URL is loaded and rendered once.
 * Failures never fail the import: they are counted and the brand is published without artwork.
 */
export async function storeLogos(
  storage: ObjectStorage,
  requests: { brandId: string; logoUrl: string }[],
  concurrency = 4,
): Promise<{ logos: Map<string, BrandLogo>; rendered: number; failed: number; errors: string[] }> {
  const bySource = new Map<string, Promise<BrandLogo>>();
  const logos = new Map<string, BrandLogo>();
  const errors: string[] = [];
  let failed = 0;
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const { brandId, logoUrl } = requests[next++]!;
      let pending = bySource.get(logoUrl);
      if (!pending) bySource.set(logoUrl, (pending = loadLogoSource(logoUrl).then((source) => storeLogo(storage, source, 'rendered'))));
      try {
        logos.set(brandId, await pending);
      } catch (error) {
        failed++;
        if (errors.length < 10) errors.push(`${brandId}: ${(error as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  return { logos, rendered: logos.size, failed, errors };
}
