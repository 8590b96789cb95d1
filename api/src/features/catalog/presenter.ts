import type { CatalogBrand, EndpointHealth } from '../../../../core/src/catalog/model.js';
import { JsonMemo } from '../../shared/http/json-memo.js';
import { disambiguations } from './disambiguation.js';
import type { SearchAnswer } from './service.js';

export const logoPath = (brandId: string) => `/api/sdk/v1/catalog/brands/${brandId}/logo`;

/** A brand as clients see it (/openapi.json, `Brand`, with aliases). `origin` makes logoUrl absolute. */
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
// origin: PUBLIC_BASE_URL, or one taken from the request). What changes without a new snapshot (the
// endpoint's health) or depends on the request (fuzzy, distance, disambiguation) is appended to it.
const brandJson = new JsonMemo(presentBrand);

/** The memoised brand with more members after its own (`extra` starts with a comma). */
const withMembers = (brand: CatalogBrand, origin: string, extra: string): string => {
  const json = brandJson.json(brand, origin);
  return `${json.slice(0, -1)}${extra}}`;
};

// Outcomes are replaced, never changed, when the operator publishes (endpoint-health.ts): each one's JSON is built once.
const endpointJsons = new WeakMap<EndpointHealth, string>();

function endpointJson(health: EndpointHealth): string {
  let json = endpointJsons.get(health);
  if (json === undefined)
    endpointJsons.set(
      health,
      (json = `,"endpoint":{"status":"${health.status}","fhirVersion":${JSON.stringify(health.fhirVersion)},"smartConfiguration":${health.smartConfiguration},"checkedAt":${JSON.stringify(health.checkedAt)}}`),
    );
  return json;
}

export function searchJson(answer: SearchAnswer, origin: string): string {
  const { brands, exact, distanceKm } = answer;
  const labels = disambiguations(brands, answer.nameKeys);
  const items = brands.map((brand, i) => {
    let extra = endpointJson(answer.endpointOf(brand)) + `,"fuzzy":${i >= exact}`;
    if (distanceKm) extra += `,"distanceKm":${distanceKm[i] ?? null}`;
    if (labels[i] !== undefined) extra += `,"disambiguation":${JSON.stringify(labels[i])}`;
    return withMembers(brand, origin, extra);
  });
  const next = answer.nextCursor === undefined ? '' : `,"nextCursor":${JSON.stringify(answer.nextCursor)}`;
  return `{"brands":[${items.join(',')}],"count":${brands.length}${next}}`;
}

export const lookupJson = (found: { brand: CatalogBrand; endpoint: EndpointHealth }, origin: string): string =>
  `{"brand":${withMembers(found.brand, origin, endpointJson(found.endpoint))}}`;
