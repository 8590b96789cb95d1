import type { CatalogBrand } from '../../catalog/model.js';

export const logoPath = (brandId: string) => `/api/sdk/v1/catalog/brands/${brandId}/logo`;

/** A brand as clients see it (seed §2.3, plus aliases). `origin` makes logoUrl absolute. */
export function presentBrand(brand: CatalogBrand, origin: string) {
  return {
    id: brand.id,
    name: brand.name,
    aliases: brand.aliases,
    platformType: brand.platformType,
    fhirBaseUrl: brand.fhirBaseUrl,
    city: brand.city,
    state: brand.state,
    portalUrl: brand.portalUrl,
    logoUrl: brand.logo ? origin + logoPath(brand.id) : null,
  };
}

// Brands are immutable within a snapshot, so each one's JSON is built once per origin and responses are
// assembled from those pieces.
const memo = new Map<string, WeakMap<CatalogBrand, string>>();

export function brandJson(brand: CatalogBrand, origin: string): string {
  let byBrand = memo.get(origin);
  if (!byBrand) {
    if (memo.size > 32) memo.clear(); // origins come from PUBLIC_BASE_URL or the Host header: keep it bounded
    memo.set(origin, (byBrand = new WeakMap()));
  }
  let json = byBrand.get(brand);
  if (json === undefined) byBrand.set(brand, (json = JSON.stringify(presentBrand(brand, origin))));
  return json;
}

export const searchJson = (brands: CatalogBrand[], origin: string): string => `{"brands":[${brands.map((b) => brandJson(b, origin)).join(',')}],"count":${brands.length}}`;

export const lookupJson = (brand: CatalogBrand, origin: string): string => `{"brand":${brandJson(brand, origin)}}`;
