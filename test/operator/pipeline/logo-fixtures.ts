// Artwork for the logo tests, made on the spot: images in every accepted format, icon files (embedded PNG
// and BMP entries), a decompression bomb, a truncated PNG, and a loopback server that records any request.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { FileObjectStorage } from '#core/object-storage/index.js';

/** A logo-like image: a coloured disc on a transparent square. */
export async function artwork(size: number, colour = '#1a7f5a'): Promise<sharp.Sharp> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}"><circle cx="${size / 2}" cy="${size / 2}" r="${size * 0.4}" fill="${colour}"/></svg>`;
  return sharp(Buffer.from(svg));
}

export const png = async (size: number, colour?: string) => (await artwork(size, colour)).png().toBuffer();

/** The same artwork in every format the renderer accepts (ICO: one embedded PNG). */
export async function everyFormat(): Promise<Record<string, Buffer>> {
  const image = async () => artwork(64);
  return {
    png: await png(64),
    jpeg: await (await image()).flatten({ background: '#fff' }).jpeg().toBuffer(),
    gif: await (await image()).gif().toBuffer(),
    webp: await (await image()).webp().toBuffer(),
    avif: await (await image()).avif({ effort: 0 }).toBuffer(),
    ico: ico([{ png: await png(64) }]),
    svg: Buffer.from(
      '<?xml version="1.0"?>\n<!-- logo -->\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n',
    ),
  };
}

/** A 32-bit BMP DIB as icons store it: bottom-up BGRA rows, then a 1-bit AND mask (`transparent(x, y)`). */
export function bmpEntry(
  width: number,
  height: number,
  bgra: [number, number, number, number],
  transparent: (x: number, y: number) => boolean = () => false,
  bitCount: 24 | 32 = 32,
): Buffer {
  const stride = Math.ceil((width * bitCount) / 32) * 4;
  const maskStride = Math.ceil(width / 32) * 4;
  const dib = Buffer.alloc(40 + (stride + maskStride) * height);
  dib.writeUInt32LE(40, 0);
  dib.writeInt32LE(width, 4);
  dib.writeInt32LE(height * 2, 8);
  dib.writeUInt16LE(1, 12);
  dib.writeUInt16LE(bitCount, 14);
  for (let y = 0; y < height; y++) {
    const row = 40 + (height - 1 - y) * stride;
    const mask = 40 + stride * height + (height - 1 - y) * maskStride;
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < bitCount / 8; c++) dib[row + x * (bitCount / 8) + c] = bgra[c]!;
      if (transparent(x, y)) dib[mask + (x >> 3)] = dib[mask + (x >> 3)]! | (0x80 >> (x & 7));
    }
  }
  return dib;
}

/** An ICO file of the given entries, in order (directory sizes from the entries themselves). */
export function ico(entries: ({ png: Buffer } | { bmp: Buffer; size: number })[]): Buffer {
  const header = Buffer.alloc(6 + 16 * entries.length);
  header.writeUInt16LE(1, 2);
  header.writeUInt16LE(entries.length, 4);
  let offset = header.length;
  const bodies = entries.map((entry, i) => {
    const body = 'png' in entry ? entry.png : entry.bmp;
    const size = 'png' in entry ? body.readUInt32BE(16) : entry.size;
    const at = 6 + 16 * i;
    header[at] = size >= 256 ? 0 : size;
    header[at + 1] = size >= 256 ? 0 : size;
    header.writeUInt16LE(1, at + 4);
    header.writeUInt16LE(32, at + 6);
    header.writeUInt32LE(body.length, at + 8);
    header.writeUInt32LE(offset, at + 12);
    offset += body.length;
    return body;
  });
  return Buffer.concat([header, ...bodies]);
}

const crcChunk = (type: string, data: Buffer) => {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), 8 + data.length);
  return out;
};

function crc32(bytes: Buffer): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

/** A valid 1-bit PNG of side × side pixels, all zero: tens of kilobytes that decode to hundreds of megapixels. */
export function bombPng(side = 20_000): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr[8] = 1; // bit depth 1, colour type 0 (grey)
  const rows = deflateSync(Buffer.alloc((Math.ceil(side / 8) + 1) * side), { level: 9 });
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    crcChunk('IHDR', ihdr),
    crcChunk('IDAT', rows),
    crcChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Object storage in a fresh temporary directory. */
export async function tempStorage(): Promise<{ storage: FileObjectStorage; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'portico-logos-'));
  return { storage: new FileObjectStorage(dir), remove: () => rm(dir, { recursive: true, force: true }) };
}

/** A loopback TCP server that counts connections and answers none: proof that nothing was fetched. */
export async function tripwire(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { port, connections: () => connections, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The colour at the centre of a stored rendition, as [r, g, b, a]. */
export async function centre(image: Buffer): Promise<number[]> {
  const { data, info } = await sharp(image).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (Math.floor(info.height / 2) * info.width + Math.floor(info.width / 2)) * 4;
  return [...data.subarray(at, at + 4)];
}
