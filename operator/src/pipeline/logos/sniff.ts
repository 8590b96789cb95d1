// What a logo is, decided from its bytes alone: never from the URL, a file name or a Content-Type header.
// Raster formats are recognised by their magic numbers; SVG by a conservative text check (svg.ts: UTF-8 text
// whose first element is <svg>, no DTD internal subset, no entity declarations). Anything else is refused
// here, before sharp (or the ICO reader) sees a byte of it.
import { LogoError } from './errors.js';
import { looksLikeSvg } from './svg.js';

export { LogoError };

export const IMAGE_TYPES = ['png', 'jpeg', 'gif', 'webp', 'avif', 'ico', 'svg'] as const;
export type ImageType = (typeof IMAGE_TYPES)[number];

const startsWith = (bytes: Buffer, signature: number[], at = 0) =>
  bytes.length >= at + signature.length && signature.every((b, i) => bytes[at + i] === b);
const ascii = (bytes: Buffer, start: number, end: number) => bytes.toString('latin1', start, end);

/** AVIF brands sharp's HEIF loader decodes (its prebuilt libheif has AV1, not HEVC: HEIC is refused). */
const AVIF_BRANDS = new Set(['avif', 'avis']);

function isAvif(bytes: Buffer): boolean {
  if (bytes.length < 16 || ascii(bytes, 4, 8) !== 'ftyp') return false;
  const boxSize = bytes.readUInt32BE(0);
  if (boxSize < 16 || boxSize > bytes.length || boxSize > 4096) return false;
  if (AVIF_BRANDS.has(ascii(bytes, 8, 12))) return true;
  for (let at = 16; at + 4 <= boxSize; at += 4) if (AVIF_BRANDS.has(ascii(bytes, at, at + 4))) return true;
  return false;
}

function isIco(bytes: Buffer): boolean {
  // ICONDIR: reserved 0, type 1 (icon; 2 would be a cursor), 1..255 images, then 16-byte entries.
  if (bytes.length < 22 || !startsWith(bytes, [0, 0, 1, 0])) return false;
  const count = bytes.readUInt16LE(4);
  return count > 0 && bytes.length >= 6 + 16 * count;
}

/**
 * The image type of `bytes` when their first bytes decide it (magic numbers, the ICO directory): constant
 * time, so callers may run it anywhere; undefined when only the SVG text check could accept them.
 */
export function binaryImageType(bytes: Buffer): ImageType | undefined {
  if (bytes.length === 0) throw new LogoError('empty', 'the logo is empty');
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (bytes.length >= 6 && (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a')) return 'gif';
  if (bytes.length >= 16 && ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP') return 'webp';
  if (isAvif(bytes)) return 'avif';
  if (isIco(bytes)) return 'ico';
  return undefined;
}

/** The image type of `bytes`, or a LogoError naming why it is not artwork we accept. */
export function sniffImageType(bytes: Buffer): ImageType {
  const type = binaryImageType(bytes);
  if (type !== undefined) return type;
  if (looksLikeSvg(bytes)) return 'svg';
  throw new LogoError('unsupported-type', 'the logo is not a PNG, JPEG, GIF, WebP, AVIF, ICO or SVG image');
}

export { looksLikeSvg };
