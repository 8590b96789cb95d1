// What a logo is, decided from its bytes alone: never from the URL, a file name or a Content-Type header.
// Raster formats are recognised by their magic numbers; SVG by a conservative text check (UTF-8 text whose
// first element is <svg>, no DTD internal subset, no entity declarations). Anything else is refused here,
// before sharp (or the ICO reader) sees a byte of it.

export const IMAGE_TYPES = ['png', 'jpeg', 'gif', 'webp', 'avif', 'ico', 'svg'] as const;
export type ImageType = (typeof IMAGE_TYPES)[number];

/** Refusals carry a short machine-readable reason, counted per import (`logos.reasons`). */
export class LogoError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'LogoError';
  }
}

const startsWith = (bytes: Buffer, signature: number[], at = 0) => bytes.length >= at + signature.length && signature.every((b, i) => bytes[at + i] === b);
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

/** The image type of `bytes`, or a LogoError naming why it is not artwork we accept. */
export function sniffImageType(bytes: Buffer): ImageType {
  if (bytes.length === 0) throw new LogoError('empty', 'the logo is empty');
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (bytes.length >= 6 && (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a')) return 'gif';
  if (bytes.length >= 16 && ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP') return 'webp';
  if (isAvif(bytes)) return 'avif';
  if (isIco(bytes)) return 'ico';
  if (looksLikeSvg(bytes)) return 'svg';
  throw new LogoError('unsupported-type', 'the logo is not a PNG, JPEG, GIF, WebP, AVIF, ICO or SVG image');
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Prolog an SVG file may start with: XML declaration, comments, processing instructions, a DOCTYPE without internal subset. */
// One whitespace character per repetition: `(?:\s+|…)*` would backtrack exponentially on a run of spaces.
const SVG_START = /^(?:\s|<\?xml\s[^>]*\?>|<!--(?:(?!-->)[\s\S])*-->|<!DOCTYPE\s+svg\b[^>[]*>)*<svg[\s>/]/;

function svgText(bytes: Buffer): string | undefined {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return undefined; // not UTF-8 text
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (/[\u0000-\u0008\u000e-\u001f]/.test(text)) return undefined; // binary, not text
  if (!SVG_START.test(text)) return undefined;
  if (/<!ENTITY/i.test(text) || /<\?xml-stylesheet/i.test(text)) return undefined; // entity expansion, external style sheets
  if (!/<\/svg\s*>\s*(?:<!--(?:(?!-->)[\s\S])*-->\s*)*$/.test(text) && !/^[\s\S]*?<svg\b[^>]*\/>\s*$/.test(text)) return undefined;
  return text;
}

export const looksLikeSvg = (bytes: Buffer): boolean => svgText(bytes) !== undefined;

// References that leave the document: href/xlink:href values and CSS url()/@import other than `#fragment`
// and `data:`. librsvg refuses them anyway when it has no base URL (sharp passes SVG as a buffer); they are
// neutralised as well, so no version or build of the renderer can be made to fetch or read anything.
const EXTERNAL_HREF = /(\b(?:xlink:)?href\s*=\s*)(["'])(?!\s*(?:#|data:))[^"']*\2/gi;
const EXTERNAL_CSS_URL = /url\(\s*(["']?)(?!\s*(?:#|data:))[^)]*\)/gi;
const CSS_IMPORT = /@import\b[^;]*;?/gi;

/** The SVG as rendered: validated again, external references replaced by inert ones. */
export function inertSvg(bytes: Buffer): Buffer {
  const text = svgText(bytes);
  if (text === undefined) throw new LogoError('unsupported-type', 'the logo is not an SVG document');
  const inert = text.replace(EXTERNAL_HREF, '$1$2#$2').replace(EXTERNAL_CSS_URL, 'none').replace(CSS_IMPORT, '');
  return Buffer.from(inert, 'utf8');
}
