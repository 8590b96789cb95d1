// Builds CatalogBrand objects from the Epic brands (2026) fixture: its Epic rows grouped by FHIR base URL and its
// Oracle Health rows (test/fixtures/brands/epic-brands-2026, synthetic: see test/fixtures/brands/SOURCES.md). A
// deliberately small adapter, not the import pipeline: enough shape for the search index to be tested against
// a catalog-sized list of names, aliases and places.
import { createHash } from 'node:crypto';
import type { CatalogBrand, PlatformType } from '#core/catalog/model.js';
import { brandFile } from '../../../../../testkit/brand-data.js';

interface EpicGroup {
  fhirBaseUrl: string;
  name: string;
  aliases: string[];
  states: string[];
}

interface SmartEndpoint {
  name: string;
  fhirBaseUrl: string;
  source: 'epic' | 'cerner';
  city?: string;
  state?: string;
}

const readJson = <T>(file: string): T => JSON.parse(brandFile(file)) as T;

/** https, lower-case host, no trailing slash: enough to key brands by FHIR system here. */
function normaliseUrl(raw: string): string {
  const url = new URL(raw.trim());
  url.protocol = 'https:';
  return url.toString().replace(/\/+$/, '');
}

export function brandId(fhirBaseUrl: string): string {
  return 'b_' + createHash('sha256').update(fhirBaseUrl).digest('base64url').slice(0, 22);
}

export function buildBrand(overrides: Partial<CatalogBrand> & { name: string }): CatalogBrand {
  const fhirBaseUrl = overrides.fhirBaseUrl ?? `https://fhir.example.test/${encodeURIComponent(overrides.name)}`;
  return {
    id: brandId(fhirBaseUrl),
    aliases: [],
    platformType: 'OTHER',
    fhirBaseUrl,
    city: null,
    state: null,
    portalUrl: null,
    logo: null,
    ...overrides,
  };
}

/**
 * Epic brands grouped by FHIR base URL (first name = name, the others = aliases; the first state, since a
 * brand has one) plus the Oracle Health (Cerner) rows with their city and state.
 */
export function loadRealBrands(): CatalogBrand[] {
  const brands = new Map<string, CatalogBrand>();
  const put = (url: string, platformType: PlatformType, fields: Partial<CatalogBrand> & { name: string }) => {
    const fhirBaseUrl = normaliseUrl(url);
    if (!brands.has(fhirBaseUrl)) brands.set(fhirBaseUrl, buildBrand({ ...fields, fhirBaseUrl, platformType }));
  };
  for (const group of readJson<EpicGroup[]>('epic-brands-2026/DERIVED-epic-grouped-by-fhirBaseUrl.json')) {
    put(group.fhirBaseUrl, 'EPIC', { name: group.name, aliases: group.aliases, state: group.states[0] ?? null });
  }
  for (const row of readJson<SmartEndpoint[]>('epic-brands-2026/smart-endpoints.decoded.json')) {
    if (row.source !== 'cerner') continue;
    put(row.fhirBaseUrl, 'CERNER', { name: row.name, city: row.city ?? null, state: row.state ?? null });
  }
  return [...brands.values()];
}
