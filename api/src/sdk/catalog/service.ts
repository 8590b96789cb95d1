// The public catalog: search, lookup and logos over the snapshot this replica serves, and the stored
// assets (artwork) behind them.
import { createHash } from 'node:crypto';
import type { ActiveCatalog } from '../../catalog/active.js';
import { LOGO_FORMATS, LOGO_SIZES, PLATFORM_TYPES, type CatalogBrand, type LogoFormat, type LogoSize, type PlatformType } from '../../../../core/src/catalog/model.js';
import { DependencyUnavailableError } from '../../../../core/src/errors.js';
import { InvalidObjectKeyError, type ObjectStorage, type StoredObject } from '../../../../core/src/object-storage/index.js';
import { invalidField, notFound } from '../../http/errors.js';

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

  /** Short queries find nothing (the index's own rule); no snapshot yet, nothing either. */
  search(input: SearchInput, origin: string): Answer<CatalogBrand[]> {
    const platform = parsePlatform(input.platform);
    const q = (input.q ?? '').trim();
    const served = this.catalog.get(); // one snapshot for the whole request
    const etag = tag(served?.snapshotId ?? NO_SNAPSHOT, `search\n${q}\n${platform ?? ''}\n${input.limit}\n${origin}`);
    return { value: served ? served.index.search(q, { limit: input.limit, ...(platform && { platform }) }) : [], etag };
  }

  brand(brandId: string, origin: string): Answer<CatalogBrand> {
    const served = this.catalog.get();
    const brand = served?.index.get(brandId);
    if (!served || !brand) throw notFound('brand');
    return { value: brand, etag: tag(served.snapshotId, `brand\n${brandId}\n${origin}`) };
  }

  /** Where the brand's artwork of this size and format lives; WebP falls back to PNG in snapshots written before WebP. */
  logoLocation(brandId: string, size: number, format: string): string {
    if (!isLogoSize(size)) throw invalidField('query', 'size', `must be one of ${LOGO_SIZES.join(', ')}`);
    if (!isLogoFormat(format)) throw invalidField('query', 'format', `must be one of ${LOGO_FORMATS.join(', ')}`);
    const brand = this.catalog.get()?.index.get(brandId);
    if (!brand) throw notFound('brand');
    const key = ((format === 'webp' && brand.logo?.webp) || brand.logo?.assets)?.[`${size}`];
    if (key === undefined) throw notFound('logo');
    return this.storage.publicUrl(key);
  }

  /** A stored asset; 404 when there is none, 503 when object storage cannot say. */
  async asset(key: string): Promise<StoredObject> {
    let object: StoredObject | null;
    try {
      object = await this.storage.get(key);
    } catch (error) {
      if (error instanceof InvalidObjectKeyError) throw notFound('asset'); // no such key can exist
      throw new DependencyUnavailableError('object storage', { cause: error });
    }
    if (!object) throw notFound('asset');
    return object;
  }
}

const isLogoSize = (size: number): size is LogoSize => (LOGO_SIZES as readonly number[]).includes(size);
const isLogoFormat = (format: string): format is LogoFormat => (LOGO_FORMATS as readonly string[]).includes(format);

function parsePlatform(raw: string | undefined): PlatformType | undefined {
  if (raw === undefined) return undefined;
  const upper = raw.toUpperCase();
  if (!(PLATFORM_TYPES as readonly string[]).includes(upper)) throw invalidField('query', 'platform', `must be one of ${PLATFORM_TYPES.join(', ')}`);
  return upper as PlatformType;
}

function tag(snapshotId: string, request: string): string {
  return `"${snapshotId}.${createHash('sha256').update(request).digest('base64url').slice(0, 16)}"`;
}
