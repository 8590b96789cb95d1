// The public catalog: search, lookup and logos over the snapshot this replica serves.
import { createHash } from 'node:crypto';
import type { ActiveCatalog } from '../../catalog/active.js';
import { LOGO_FORMATS, LOGO_SIZES, PLATFORM_TYPES, type CatalogBrand, type LogoFormat, type LogoSize, type PlatformType } from '../../catalog/model.js';
import { invalidField, notFound } from '../../http/errors.js';
import type { ObjectStorage } from '../../infra/object-storage/types.js';

export const MIN_QUERY_LENGTH = 2;

export interface SearchInput {
  q?: string;
  platform?: string;
  limit: number;
}

export interface Answer<T> {
  value: T;
  /** Strong entity tag derived from the snapshot and the request. */
  etag: string;
}

const NO_SNAPSHOT = 'empty';

export class CatalogService {
  constructor(
    private readonly catalog: ActiveCatalog,
    private readonly storage: ObjectStorage,
  ) {}

  search(input: SearchInput, origin: string): Answer<CatalogBrand[]> {
    const platform = parsePlatform(input.platform);
    const q = (input.q ?? '').trim();
    const served = this.catalog.get(); // one snapshot for the whole request
    const etag = tag(served?.snapshotId ?? NO_SNAPSHOT, `search\n${q}\n${platform ?? ''}\n${input.limit}\n${origin}`);
    if (!served || q.length < MIN_QUERY_LENGTH) return { value: [], etag };
    return { value: served.index.search(q, { limit: input.limit, ...(platform && { platform }) }), etag };
  }

  brand(brandId: string, origin: string): Answer<CatalogBrand> {
    const found = this.findBrand(brandId, origin);
    if (!found) throw notFound('brand');
    return found;
  }

  /** The same without throwing: undefined when the served catalog has no such brand. */
  findBrand(brandId: string, origin: string): Answer<CatalogBrand> | undefined {
    const served = this.catalog.get();
    const brand = served?.index.get(brandId);
    return served && brand ? { value: brand, etag: tag(served.snapshotId, `brand\n${brandId}\n${origin}`) } : undefined;
  }

  /** Where the brand's pre-rendered artwork of this size and format lives; 404 when the snapshot has none. */
  logoLocation(brandId: string, size: number, format: string = 'png'): string {
    if (!isLogoSize(size)) throw invalidField('query', 'size', `must be one of ${LOGO_SIZES.join(', ')}`);
    if (!isLogoFormat(format)) throw invalidField('query', 'format', `must be one of ${LOGO_FORMATS.join(', ')}`);
    if (!this.catalog.get()?.index.get(brandId)) throw notFound('brand');
    const location = this.findLogoLocation(brandId, size, format);
    if (!location) throw notFound('logo');
    return location;
  }

  /** The asset of a size and format; WebP falls back to PNG in snapshots written before WebP. */
  findLogoLocation(brandId: string, size: LogoSize, format: LogoFormat = 'png'): string | undefined {
    const logo = this.catalog.get()?.index.get(brandId)?.logo;
    const key = ((format === 'webp' && logo?.webp) || logo?.assets)?.[`${size}`];
    return key === undefined ? undefined : this.storage.publicUrl(key);
  }

  async asset(key: string) {
    const object = await this.storage.get(key).catch(() => null);
    if (!object) throw notFound('asset');
    return object;
  }
}

export const isLogoSize = (size: number): size is LogoSize => (LOGO_SIZES as readonly number[]).includes(size);
export const isLogoFormat = (format: string): format is LogoFormat => (LOGO_FORMATS as readonly string[]).includes(format);

function parsePlatform(raw: string | undefined): PlatformType | undefined {
  if (raw === undefined) return undefined;
  const upper = raw.toUpperCase();
  if (!(PLATFORM_TYPES as readonly string[]).includes(upper)) throw invalidField('query', 'platform', `must be one of ${PLATFORM_TYPES.join(', ')}`);
  return upper as PlatformType;
}

function tag(snapshotId: string, request: string): string {
  return `"${snapshotId}.${createHash('sha256').update(request).digest('base64url').slice(0, 16)}"`;
}
