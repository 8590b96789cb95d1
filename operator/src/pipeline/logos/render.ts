// Rendering sniffed artwork with sharp into square transparent PNG and WebP renditions at every configured
// size. Safe settings throughout: a pixel limit on every input (decompression bombs stop at the header),
// failOn 'error' (truncated or corrupt files are refused, not half-rendered), a time limit per pipeline,
// SVG only as an inert buffer (no file path, no base URL, external references neutralised). sharp decodes
// and encodes off the event loop; what JavaScript would parse (SVG text, ICO files) goes to the artwork parser.
//
// Speed: the source is decoded once, into raw RGBA at the largest size; each smaller size is resized from the
// previous one, and each size is encoded as PNG and WebP from raw pixels. Encoder settings are chosen for
// logos: PNG at zlib level 6 (level 9 costs ~20 % more CPU for ~4 % smaller files), lossy WebP at quality 85
// with lossless alpha, effort 2 (effort 4 doubles the WebP encoding time for ~2 % smaller files).
import { createHash } from 'node:crypto';
import sharp, { type SharpOptions } from 'sharp';
import { LOGO_FORMATS, type LogoFormat, type LogoSize } from '#core/catalog/model.js';
import { LogoError } from './errors.js';
import { sharedArtworkParser, type ArtworkParser } from './parser.js';
import type { ImageType } from './sniff.js';

/** Part of every stored key: bump it whenever renditions of the same source would come out different. */
export const RENDERER_VERSION = 2;
export { LOGO_FORMATS, type LogoFormat };
export const CONTENT_TYPES: Record<LogoFormat, string> = { png: 'image/png', webp: 'image/webp' };

/** No source artwork needs more than 4096 × 4096 pixels (SVG: as rasterised). */
export const MAX_INPUT_PIXELS = 4096 * 4096;
const PIPELINE_TIMEOUT_SECONDS = 20;
/** Vector artwork is rasterised at no more than this density (dpi), whatever its declared size. */
const MAX_SVG_DENSITY = 2400;
const TRANSPARENT = { r: 0, g: 0, b: 0, alpha: 0 };

/** How much work rendering has done in this process (tests and benchmarks read it). */
export const renderCounters = { artworks: 0, pipelines: 0 };

export const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

/**
 * Content-addressed key of one rendition: derived from the source bytes' hash and every rendering
 * parameter, so unchanged artwork maps to keys that already exist and is not rendered again.
 */
export function renditionKey(sourceHash: string, size: LogoSize, format: LogoFormat): string {
  return `logo-${sha256(`portico-logo/v${RENDERER_VERSION}\n${sourceHash}\n${size}\n${format}`).slice(0, 40)}.${format}`;
}

const decodeOptions = (extra: SharpOptions = {}): SharpOptions => ({
  limitInputPixels: MAX_INPUT_PIXELS,
  failOn: 'error',
  ...extra,
});

function pipeline(input: Buffer, options: SharpOptions) {
  renderCounters.pipelines++;
  return sharp(input, options).timeout({ seconds: PIPELINE_TIMEOUT_SECONDS });
}

/** Width and height from the header, with the same limits (for choosing between favicons). */
export async function measureImage(bytes: Buffer): Promise<{ width: number; height: number }> {
  const meta = await sharp(bytes, decodeOptions()).metadata();
  if (!meta.width || !meta.height) throw new LogoError('undecodable', 'the image has no dimensions');
  if (meta.width * meta.height > MAX_INPUT_PIXELS)
    throw new LogoError('too-many-pixels', `${meta.width}×${meta.height} is over the pixel limit`);
  return { width: meta.width, height: meta.height };
}

/** What sharp is given for each sniffed type; ICO is unpacked by the artwork parser (sharp cannot read it). */
async function sharpInput(
  bytes: Buffer,
  type: ImageType,
  largest: number,
  parser: ArtworkParser,
): Promise<{ input: Buffer; options: SharpOptions }> {
  if (type === 'svg') {
    const svg = await parser.inertSvg(bytes);
    const meta = await sharp(svg, decodeOptions()).metadata();
    const edge = Math.max(1, Math.min(meta.width ?? largest, meta.height ?? largest));
    const density = Math.min(MAX_SVG_DENSITY, Math.max(1, (72 * largest) / edge));
    return { input: svg, options: decodeOptions({ density }) };
  }
  if (type === 'ico') {
    const icon = await parser.largestIcon(bytes);
    if (icon.kind === 'png') return { input: icon.bytes, options: decodeOptions() };
    return {
      input: icon.data,
      options: decodeOptions({ raw: { width: icon.width, height: icon.height, channels: 4 } }),
    };
  }
  return { input: bytes, options: decodeOptions() };
}

export interface Rendition {
  size: LogoSize;
  format: LogoFormat;
  body: Buffer;
}

/** Every size × format of one artwork, largest size first; SVG and ICO are prepared by `parser` (off the event loop).
 * */
export async function renderArtwork(
  bytes: Buffer,
  type: ImageType,
  sizes: readonly LogoSize[],
  parser: ArtworkParser = sharedArtworkParser(),
): Promise<Rendition[]> {
  renderCounters.artworks++;
  const ordered = [...new Set(sizes)].sort((a, b) => b - a);
  if (ordered.length === 0) return [];
  const { input, options } = await sharpInput(bytes, type, ordered[0]!, parser);
  let pixels: { data: Buffer; info: sharp.OutputInfo };
  try {
    pixels = await pipeline(input, options)
      .autoOrient()
      .resize(ordered[0], ordered[0], { fit: 'contain', background: TRANSPARENT })
      .toColourspace('srgb')
      .ensureAlpha()
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
  } catch (error) {
    const message = (error as Error).message;
    if (/pixel limit/i.test(message))
      throw new LogoError('too-many-pixels', 'the image is over the pixel limit (decompression bomb?)');
    if (/timeout/i.test(message)) throw new LogoError('timeout', 'rendering took too long');
    throw new LogoError('undecodable', `the image could not be decoded: ${message}`);
  }
  const renditions: Promise<Rendition>[] = [];
  const track = (p: Promise<Rendition>) => {
    p.catch(() => {}); // observed by Promise.all below; never an unhandled rejection while later sizes resize
    renditions.push(p);
  };
  for (const size of ordered) {
    if (pixels.info.width !== size) {
      const from = { raw: { width: pixels.info.width, height: pixels.info.height, channels: pixels.info.channels } };
      pixels = await pipeline(pixels.data, from).resize(size, size).raw().toBuffer({ resolveWithObject: true });
    }
    const raw = { raw: { width: size, height: size, channels: pixels.info.channels } };
    const data = pixels.data;
    track(
      pipeline(data, raw)
        .png({ compressionLevel: 6 })
        .toBuffer()
        .then((body) => ({ size, format: 'png' as const, body })),
    );
    track(
      pipeline(data, raw)
        .webp({ quality: 85, alphaQuality: 100, effort: 2 })
        .toBuffer()
        .then((body) => ({ size, format: 'webp' as const, body })),
    );
  }
  return Promise.all(renditions);
}
