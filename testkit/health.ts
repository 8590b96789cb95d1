// Endpoint health tests run the operator's checks through the real public-only agent against a loopback stub
// (fhir-stub.ts) standing in for the internet: host names under fhir.test resolve to the stub's 127.0.0.1,
// which the agent admits (and nothing else private: private.fhir.test resolves to 127.0.0.2, internal.fhir.test
// to 10.0.0.7, both refused), and the stub's certificate is signed by a test CA the agent trusts. Real brands
// keep their names, ids and URL paths, with their host names mapped under fhir.test.
import type { CatalogBrand } from '#core/catalog/model.js';
import type { PublicHttpsAgent } from '#core/net/address-policy.js';
import { healthAgent } from '../operator/src/health/agent.js';
import type { HealthSettings } from '../operator/src/health/settings.js';
import { mergeSources, type LoadedSource } from '../operator/src/pipeline/index.js';
import { lookupFrom } from './api.js';
import type { FhirStub } from './fhir-stub.js';
import { testTls } from './tls.js';

export const STUB_ADDRESS = '127.0.0.1';
/** A second loopback address, for servers an SSRF must not reach. */
export const PRIVATE_ADDRESS = '127.0.0.2';

export const healthLookup = lookupFrom(async (host) => {
  if (host === 'private.fhir.test') return [PRIVATE_ADDRESS];
  if (host === 'internal.fhir.test') return ['10.0.0.7'];
  if (host === 'fhir.test' || host.endsWith('.fhir.test')) return [STUB_ADDRESS];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
});

/** The agent the operator would use, pointed at the stub. */
export function stubAgent(settings: HealthSettings): PublicHttpsAgent {
  return healthAgent(settings, { lookup: healthLookup, admitted: new Set([STUB_ADDRESS]), ca: testTls().ca });
}

export const settings = (overrides: Partial<HealthSettings> = {}): HealthSettings => ({
  intervalMs: 6 * 3_600_000,
  concurrency: 32,
  perHostConcurrency: 2,
  perHostRate: { count: 1000, periodMs: 1000 },
  ...overrides,
});

/** fhir-myrecord.cerner.com → fhir-myrecord-cerner-com.fhir.test (one label: the certificate is a wildcard). */
export const stubHost = (host: string): string => `${host.replace(/[^a-z0-9-]/gi, '-').toLowerCase()}.fhir.test`;

/** The real sources' merged brands (as the import pipeline merges them), their endpoints moved onto the stub. */
export function stubbedBrands(sources: LoadedSource[], stub: FhirStub): CatalogBrand[] {
  return mergeSources(sources).brands.map(({ logoUrl: _logoUrl, ...brand }) => {
    const url = new URL(brand.fhirBaseUrl);
    return {
      ...brand,
      logo: null,
      fhirBaseUrl: `https://${stubHost(url.hostname)}:${stub.port}${url.pathname === '/' ? '' : url.pathname}`,
    };
  });
}
