// A small reader for Windows icon files (favicon.ico), which sharp cannot read: picks the largest image of
// the icon directory and returns it either as the PNG it embeds (modern icons, and every 256 × 256 entry) or
// decoded from its BMP DIB (1, 4, 8, 24 and 32 bits per pixel, with the AND transparency mask) into raw
// RGBA pixels. Every offset and length is checked against the file: a malformed icon is refused, never
// read out of bounds. npm's ICO decoders are unmaintained, hence this file.
import { LogoError } from './errors.js';

export type IconImage =
  | { kind: 'png'; bytes: Buffer; width: number; height: number }
  | { kind: 'raw'; data: Buffer; width: number; height: number };

/** Icons are at most 256 × 256; a BMP entry claiming more than this is refused rather than decoded. */
const MAX_BMP_SIDE = 1024;
/**
 * Entries decoded before the icon is refused. A directory may list 65535 entries that all point at one large
 * BMP failing at its last pixel: decoding each would cost minutes. Real icons decode their largest entry.
 */
const MAX_DECODE_ATTEMPTS = 4;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

interface Entry {
  width: number;
  height: number;
  bitCount: number;
  offset: number;
  size: number;
}

const malformed = (what: string) => new LogoError('malformed-ico', `malformed ICO file: ${what}`);

function entries(ico: Buffer): Entry[] {
  if (ico.length < 6 || ico.readUInt16LE(0) !== 0 || ico.readUInt16LE(2) !== 1) throw malformed('no icon directory');
  const count = ico.readUInt16LE(4);
  if (count === 0 || ico.length < 6 + 16 * count) throw malformed('truncated icon directory');
  const list: Entry[] = [];
  for (let i = 0; i < count; i++) {
    const at = 6 + 16 * i;
    const size = ico.readUInt32LE(at + 8);
    const offset = ico.readUInt32LE(at + 12);
    if (size === 0 || offset < 6 + 16 * count || offset + size > ico.length) continue; // points outside the file
    list.push({ width: ico[at] || 256, height: ico[at + 1] || 256, bitCount: ico.readUInt16LE(at + 6), offset, size });
  }
  if (list.length === 0) throw malformed('no image inside the file');
  return list;
}

/** The icon's largest image (by pixels, then colour depth); entries that fail to decode are skipped (a few at most). */
export function largestIconImage(ico: Buffer): IconImage {
  const ranked = entries(ico).sort((a, b) => b.width * b.height - a.width * a.height || b.bitCount - a.bitCount);
  let failure: unknown;
  for (const entry of ranked.slice(0, MAX_DECODE_ATTEMPTS)) {
    const data = ico.subarray(entry.offset, entry.offset + entry.size);
    try {
      if (data.length >= 24 && data.subarray(0, 8).equals(PNG_SIGNATURE)) {
        // IHDR is the first chunk: width and height at bytes 16 and 20.
        return { kind: 'png', bytes: data, width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
      }
      return decodeDib(data);
    } catch (error) {
      failure = error;
    }
  }
  throw failure instanceof LogoError ? failure : malformed('no decodable image');
}

/** A BMP device-independent bitmap as stored in icons: height doubled (colour rows, then the AND mask), bottom-up. */
export function decodeDib(dib: Buffer): IconImage & { kind: 'raw' } {
  if (dib.length < 40) throw malformed('BMP header truncated');
  const headerSize = dib.readUInt32LE(0);
  if (headerSize < 40 || headerSize > dib.length) throw malformed('unknown BMP header');
  const width = dib.readInt32LE(4);
  const height = Math.floor(Math.abs(dib.readInt32LE(8)) / 2);
  const bitCount = dib.readUInt16LE(14);
  const compression = dib.readUInt32LE(16);
  if (width <= 0 || height <= 0 || width > MAX_BMP_SIDE || height > MAX_BMP_SIDE)
    throw malformed(`BMP size ${width}×${height}`);
  if (![1, 4, 8, 24, 32].includes(bitCount)) throw malformed(`${bitCount}-bit BMP`);
  if (compression !== 0 && !(compression === 3 && bitCount === 32)) throw malformed('compressed BMP');

  const paletteSize = bitCount <= 8 ? dib.readUInt32LE(32) || 1 << bitCount : 0;
  if (paletteSize > 1 << bitCount) throw malformed('BMP palette too large');
  const paletteAt = headerSize + (compression === 3 && headerSize === 40 ? 12 : 0); // BITFIELDS masks follow a v1 header
  const pixelsAt = paletteAt + 4 * paletteSize;
  const stride = Math.ceil((width * bitCount) / 32) * 4;
  const maskStride = Math.ceil(width / 32) * 4;
  if (pixelsAt + stride * height > dib.length) throw malformed('BMP pixel data truncated');
  const hasMask = pixelsAt + (stride + maskStride) * height <= dib.length;
  const maskAt = pixelsAt + stride * height;

  const out = Buffer.alloc(width * height * 4);
  let anyAlpha = false;
  for (let y = 0; y < height; y++) {
    const row = pixelsAt + (height - 1 - y) * stride; // bottom-up
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 4;
      let b: number,
        g: number,
        r: number,
        a = 255;
      if (bitCount === 32) {
        [b, g, r, a] = [dib[row + 4 * x]!, dib[row + 4 * x + 1]!, dib[row + 4 * x + 2]!, dib[row + 4 * x + 3]!];
        if (a !== 0) anyAlpha = true;
      } else if (bitCount === 24) {
        [b, g, r] = [dib[row + 3 * x]!, dib[row + 3 * x + 1]!, dib[row + 3 * x + 2]!];
      } else {
        const bit = x * bitCount;
        const index = (dib[row + (bit >> 3)]! >> (8 - bitCount - (bit & 7))) & ((1 << bitCount) - 1);
        if (index >= paletteSize) throw malformed('BMP palette index out of range');
        const p = paletteAt + 4 * index;
        [b, g, r] = [dib[p]!, dib[p + 1]!, dib[p + 2]!];
      }
      out[o] = r;
      out[o + 1] = g;
      out[o + 2] = b;
      out[o + 3] = a;
    }
  }
  // 32-bit entries carry alpha themselves unless it is all zero (old writers); the rest use the AND mask.
  if (hasMask && (bitCount !== 32 || !anyAlpha)) {
    for (let y = 0; y < height; y++) {
      const row = maskAt + (height - 1 - y) * maskStride;
      for (let x = 0; x < width; x++) {
        const transparent = (dib[row + (x >> 3)]! >> (7 - (x & 7))) & 1;
        out[(y * width + x) * 4 + 3] = transparent ? 0 : 255;
      }
    }
  } else if (bitCount === 32 && !anyAlpha) {
    for (let o = 3; o < out.length; o += 4) out[o] = 255; // no alpha and no mask: opaque
  }
  return { kind: 'raw', data: out, width, height };
}
