// The public catalog: search, lookup and logos over the snapshot this replica serves, and the stored
// assets (artwork) behind them.
import { hash } from 'node:crypto';
import type { ActiveCatalog, CatalogIndex } from './active.js';
import type { SearchResult } from './search/results.js';
import { cursorPosition } from './search/browse-cursor.js';
import type { GeoPoint } from '#core/catalog/geo.js';
import {
  ENDPOINT_STATUSES,
  LOGO_FORMATS,
  LOGO_SIZES,
  PLATFORM_TYPES,
  type CatalogBrand,
  type EndpointHealth,
  type EndpointStatus,
  type LogoFormat,
  type LogoSize,
  type PlatformType,
} from '#core/catalog/model.js';
import { DependencyUnavailableError } from '#core/errors.js';
import { InvalidObjectKeyError, type ObjectStorage, type StoredObject } from '#core/object-storage/index.js';
import { invalidField, notFound } from '../../shared/http/errors.js';

export interface SearchInput {
  q?: string;
  platform?: string;
  limit: number;
  /** A 5-digit US ZIP code: order by distance from its centroid. */
  near?: string;
  /** An endpoint status, any case: only brands whose last check had it. */
  status?: string;
  /** Browsing a platform (no `q`, no `near`): the `nextCursor` of the previous page. */
  cursor?: string;
}

/** The published outcomes of the operator's endpoint checks (api/src/features/catalog/endpoint-health.ts). */
export interface EndpointHealthView {
  get(brandId: string): EndpointHealth | undefined;
  /** Changes whenever any outcome does: part of every catalog ETag. */
  readonly version: string;
}

/** What a catalog read shows of a brand's endpoint before its first check, or with checks off. */
export const UNCHECKED: EndpointHealth = {
  status: 'UNKNOWN',
  fhirVersion: null,
  smartConfiguration: false,
  checkedAt: null,
};

/** A search answer: the results, and how to show each brand's endpoint. */
export interface SearchAnswer extends SearchResult {
  endpointOf(brand: CatalogBrand): EndpointHealth;
}

/** ZIP code → centroid (core/src/catalog/geo.ts); undefined for a ZIP code it does not know. */
export type ZipCentroids = (zip: string) => GeoPoint | undefined;

export interface Answer<T> {
  value: T;
  /** Strong entity tag derived from the snapshot and the request. */
  etag: string;
}

const NO_SNAPSHOT = 'empty';

export class CatalogService {
  // The `status=` filters of the latest (snapshot, health version): rebuilt when either moves, not per request.
  // Keyed by the snapshot's id rather than its index, so a replaced index is not kept alive by this cache.
  private statusMasks: { snapshotId: string; version: string; masks: Map<EndpointStatus, Uint8Array> } | undefined;

  constructor(
    private readonly catalog: Pick<ActiveCatalog, 'get'>,
    private readonly storage: ObjectStorage,
    private readonly health: EndpointHealthView,
    private readonly zipCentroid: ZipCentroids,
  ) {}

  /** The snapshot answers are built from now (NO_SNAPSHOT before the first): with healthVersion, all they depend on
   * besides the request. */
  get snapshotId(): string {
    return this.catalog.get()?.snapshotId ?? NO_SNAPSHOT;
  }

  /** The endpoint-health publication answers show now. */
  get healthVersion(): string {
    return this.health.version;
  }

  /** Short queries find nothing (the index's own rule) unless `near` asks for the nearest brands; no snapshot yet,
   * nothing either. */
  search(input: SearchInput, origin: string): Answer<SearchAnswer> {
    const platform = parsePlatform(input.platform);
    const status = parseStatus(input.status);
    const near = input.near === undefined ? undefined : this.centroidOf(input.near);
    const q = (input.q ?? '').trim();
    const served = this.catalog.get(); // one snapshot for the whole request
    const health = this.health;
    const version = health.version;
    // Browsing: a platform without words or a place lists its brands, a page at a time.
    const browsing = platform !== undefined && near === undefined && [...q].length < 2;
    const after =
      input.cursor === undefined || platform === undefined ? undefined : cursorPosition(input.cursor, platform);
    if (input.cursor !== undefined && (!browsing || after === undefined))
      throw invalidField(
        'query',
        'cursor',
        browsing
          ? 'is not a nextCursor of this list'
          : 'continues browsing a platform (platform without q or near) only',
      );
    const etag = tag(
      served?.snapshotId ?? NO_SNAPSHOT,
      `search\n${q}\n${platform ?? ''}\n${input.limit}\n${input.near ?? ''}\n${status ?? ''}\n${input.cursor ?? ''}\n${version}\n${origin}`,
    );
    const endpointOf = (brand: CatalogBrand) => health.get(brand.id) ?? UNCHECKED;
    if (!served) return { value: { brands: [], exact: 0, ...(browsing && { nextCursor: null }), endpointOf }, etag };
    const only = status === undefined ? undefined : this.statusMask(served.snapshotId, served.index, version, status);
    if (browsing) return { value: { ...served.index.browse(platform, input.limit, after, only), endpointOf }, etag };
    const result = served.index.search(q, {
      limit: input.limit,
      ...(platform && { platform }),
      ...(near && { near }),
      ...(only && { only }),
    });
    return { value: { ...result, endpointOf }, etag };
  }

  brand(brandId: string, origin: string): Answer<{ brand: CatalogBrand; endpoint: EndpointHealth }> {
    const served = this.catalog.get();
    const brand = served?.index.get(brandId);
    if (!served || !brand) throw notFound('brand');
    const version = this.health.version;
    return {
      value: { brand, endpoint: this.health.get(brandId) ?? UNCHECKED },
      etag: tag(served.snapshotId, `brand\n${brandId}\n${version}\n${origin}`),
    };
  }

  private centroidOf(zip: string): GeoPoint {
    const point = /^\d{5}$/.test(zip) ? this.zipCentroid(zip) : undefined;
    if (point === undefined) throw invalidField('query', 'near', 'must be a known 5-digit US ZIP code');
    return point;
  }

  private statusMask(snapshotId: string, index: CatalogIndex, version: string, status: EndpointStatus): Uint8Array {
    let cached = this.statusMasks;
    if (cached?.snapshotId !== snapshotId || cached.version !== version)
      this.statusMasks = cached = { snapshotId, version, masks: new Map() };
    let mask = cached.masks.get(status);
    if (!mask)
      cached.masks.set(
        status,
        (mask = index.mask((brand) => (this.health.get(brand.id) ?? UNCHECKED).status === status)),
      );
    return mask;
  }

  /** Where the brand's artwork of this size and format lives; WebP falls back to PNG in snapshots written before WebP.
   * */
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
  if (!(PLATFORM_TYPES as readonly string[]).includes(upper))
    throw invalidField('query', 'platform', `must be one of ${PLATFORM_TYPES.join(', ')}`);
  return upper as PlatformType;
}

function parseStatus(raw: string | undefined): EndpointStatus | undefined {
  if (raw === undefined) return undefined;
  const upper = raw.toUpperCase();
  if (!(ENDPOINT_STATUSES as readonly string[]).includes(upper))
    throw invalidField('query', 'status', `must be one of ${ENDPOINT_STATUSES.map((s) => s.toLowerCase()).join(', ')}`);
  return upper as EndpointStatus;
}

// crypto.hash: the same digest as createHash(…).update(…).digest(…) in one call, without a Hash object (half the
// time for strings this short).
function tag(snapshotId: string, request: string): string {
  return `"${snapshotId}.${hash('sha256', request, 'base64url').slice(0, 16)}"`;
}
