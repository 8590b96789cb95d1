import type { CatalogBrand } from '../../../../core/src/catalog/model.js';
import { JsonMemo } from '../../http/json-memo.js';

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

// Brands are immutable within a snapshot, so responses are assembled from each one's memoised JSON (per
// origin: PUBLIC_BASE_URL, or one taken from the request).
const brandJson = new JsonMemo(presentBrand);

export const searchJson = (brands: CatalogBrand[], origin: string): string => `{"brands":[${brands.map((b) => brandJson.json(b, origin)).join(',')}],"count":${brands.length}}`;

export const lookupJson = (brand: CatalogBrand, origin: string): string => `{"brand":${brandJson.json(brand, origin)}}`;
