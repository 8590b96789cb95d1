// The artwork parser the logo pipeline uses: sniffing, the SVG check and inert copy, ICO decoding and the
// icon links of a home page all run on untrusted bytes, so they run in parse-pool.ts's worker threads under
// a CPU deadline, never on the event loop. Magic numbers are checked here first: they take constant time and
// settle every raster logo without a round trip. One pool serves the process (created on first use); callers
// may pass their own (tests do), and closeSharedArtworkParser() ends it at shutdown.
import type { IconImage } from './ico.js';
import type { IconLink } from './icon-links.js';
import { asBuffer } from './parse-ops.js';
import { ParsePool, type ParsePoolOptions } from './parse-pool.js';
import { binaryImageType, type ImageType } from './sniff.js';

export interface ArtworkParser {
  /** The image type, or a LogoError (`unsupported-type`, `parse-timeout`, …). */
  sniff(bytes: Buffer): Promise<ImageType>;
  /** The SVG with external references neutralised. */
  inertSvg(bytes: Buffer): Promise<Buffer>;
  /** The ICO file's largest decodable image. */
  largestIcon(bytes: Buffer): Promise<IconImage>;
  /** The ICO file's largest decodable image's dimensions. */
  iconSize(bytes: Buffer): Promise<{ width: number; height: number }>;
  /** The icons an HTML page (its bytes, read as Latin-1) links, largest declared first. */
  iconLinks(html: Buffer, pageUrl: URL): Promise<IconLink[]>;
}

/** Bytes as sent to a worker: a view of part of a larger buffer is copied, or cloning would copy all of it. */
const exact = (bytes: Buffer): Uint8Array =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);

export class WorkerArtworkParser implements ArtworkParser {
  readonly pool: ParsePool;

  constructor(options: ParsePoolOptions | ParsePool = {}) {
    this.pool = options instanceof ParsePool ? options : new ParsePool(options);
  }

  async sniff(bytes: Buffer): Promise<ImageType> {
    return binaryImageType(bytes) ?? ((await this.pool.run('sniff', [exact(bytes)])) as ImageType);
  }

  async inertSvg(bytes: Buffer): Promise<Buffer> {
    return asBuffer((await this.pool.run('inertSvg', [exact(bytes)])) as Uint8Array);
  }

  async largestIcon(bytes: Buffer): Promise<IconImage> {
    const icon = (await this.pool.run('largestIcon', [exact(bytes)])) as IconImage;
    return icon.kind === 'png' ? { ...icon, bytes: asBuffer(icon.bytes) } : { ...icon, data: asBuffer(icon.data) };
  }

  async iconSize(bytes: Buffer): Promise<{ width: number; height: number }> {
    return (await this.pool.run('iconSize', [exact(bytes)])) as { width: number; height: number };
  }

  async iconLinks(html: Buffer, pageUrl: URL): Promise<IconLink[]> {
    return (await this.pool.run('iconLinks', [exact(html), pageUrl.href])) as IconLink[];
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

let shared: WorkerArtworkParser | undefined;

/** The process's artwork parser, started on first use. */
export function sharedArtworkParser(): ArtworkParser {
  return (shared ??= new WorkerArtworkParser());
}

/** Ends the shared parser's workers (process shutdown, test teardown); a later use starts a new one. */
export async function closeSharedArtworkParser(): Promise<void> {
  const parser = shared;
  shared = undefined;
  await parser?.close();
}
