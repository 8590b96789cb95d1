// The sandbox EHR's brands as a catalog source (a SMART brands bundle, the format the operator imports): what the
// demo catalog lists as connectable brands (examples/demo/sandbox-brands.json, written by offline-catalog.ts) and
// what the connection tests publish for a sandbox on their own port.
import type { PlatformType } from '#core/catalog/model.js';
import { parseSource, type LoadedSource } from '../operator/src/pipeline/index.js';
import type { SandboxBrand } from '../sandbox/src/server.js';

const LOGO =
  "data:image/svg+xml;utf8,<svg xmlns='http://www.w3.org/2000/svg' width='100' height='100' viewBox='0 0 100 100'><rect width='100' height='100' rx='22' fill='%23137333'/><path d='M44 22h12v22h22v12H56v22H44V56H22V44h22z' fill='white'/></svg>";

/** A SMART brands bundle of the sandbox's brands at `origin` (its FHIR bases are `${origin}/fhir/<key>`). */
export function sandboxBrandsBundle(origin: string, brands: SandboxBrand[]): Record<string, unknown> {
  return {
    resourceType: 'Bundle',
    id: 'portico-sandbox-brands',
    type: 'collection',
    timestamp: '2026-11-27T00:00:00Z',
    entry: brands.flatMap((brand) => [
      {
        fullUrl: `${origin}/Organization/${brand.key}`,
        resource: {
          resourceType: 'Organization',
          id: brand.key,
          active: true,
          name: brand.name,
          alias: ['Portico Sandbox', 'Sandbox EHR'],
          extension: [
            {
              url: 'http://hl7.org/fhir/StructureDefinition/organization-brand',
              extension: [{ url: 'brandLogo', valueUrl: LOGO }],
            },
          ],
          address: [{ city: 'Madison', state: 'WI', country: 'US' }],
          endpoint: [{ reference: `Endpoint/${brand.key}` }],
        },
      },
      {
        fullUrl: `${origin}/Endpoint/${brand.key}`,
        resource: {
          resourceType: 'Endpoint',
          id: brand.key,
          status: 'active',
          connectionType: {
            system: 'http://terminology.hl7.org/CodeSystem/endpoint-connection-type',
            code: 'hl7-fhir-rest',
          },
          name: `FHIR R4 endpoint of ${brand.name}`,
          address: `${origin}/fhir/${brand.key}`,
          payloadType: [
            { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/endpoint-payload-type', code: 'none' }] },
          ],
        },
      },
    ]),
  };
}

/** One catalog source per brand, each with its own platform type (client registrations match on it in tests). */
export function sandboxSources(
  origin: string,
  brands: (SandboxBrand & { platformType: PlatformType })[],
): LoadedSource[] {
  return brands.map((brand, index) => ({
    name: `sandbox-${brand.key}`,
    priority: 50 + index,
    platformType: brand.platformType,
    parsed: parseSource('smart-brands-bundle', JSON.stringify(sandboxBrandsBundle(origin, [brand]))),
  }));
}
