// Vendor endpoint lists published as a FHIR R4 (or DSTU2-era) Bundle of Endpoints, each paired with the
// Organization it serves. Vendors pair them in three ways, all seen in real files:
//   - Oracle Health today: top-level Organizations whose `endpoint` references `Endpoint/<id>`;
//   - Oracle Health 2023: a contained Organization and `managingOrganization: {"id": "#O…"}` (an `id`, not a
//     `reference`, which is not valid FHIR but is what was published);
//   - Epic's deprecated R4/DSTU2 lists: a contained Organization and `managingOrganization: {"reference": "<id>"}`
//     without the `#`.
// One row per (Endpoint, Organization) pair, with the Organization's location, ZIP code and NPIs (Oracle's
// bundles carry both); an Endpoint with no Organization falls back to its own name, which Epic's lists set to the
// organisation's name.
import type { ParsedSource } from '../types.js';
import { RowCollector, isRecord } from './collector.js';
import {
  ResourceIndex,
  aliasesOf,
  isActive,
  isType,
  label,
  list,
  npisOf,
  pickLocation,
  readBundle,
  referencesIn,
  str,
  type Resource,
} from './fhir-common.js';

const FORMAT = 'fhir-endpoint-bundle';

/** The Organization named by Endpoint.managingOrganization: contained first, then elsewhere in the Bundle. */
function managingOrganization(endpoint: Resource, index: ResourceIndex): Resource | undefined {
  const ref = endpoint.managingOrganization;
  if (!isRecord(ref)) return undefined;
  const pointer = str(ref.reference) ?? str(ref.id);
  if (pointer === undefined) return undefined;
  const localId = pointer.startsWith('#') ? pointer.slice(1) : pointer;
  const contained = list(endpoint.contained).find(
    (r): r is Resource => isRecord(r) && isType(r, 'Organization') && r.id === localId,
  );
  if (contained !== undefined) return contained;
  return pointer.startsWith('#') ? undefined : index.resolve(pointer, 'Organization', index.fullUrlOf(endpoint));
}

export function parseFhirEndpointBundle(text: string): ParsedSource {
  const entries = readBundle(text, FORMAT);
  const index = new ResourceIndex(entries);
  const out = new RowCollector();

  const organizationsOf = new Map<Resource, Set<Resource>>();
  for (const { resource: org, fullUrl } of entries) {
    if (!isType(org, 'Organization')) continue;
    for (const ref of referencesIn(org.endpoint)) {
      const endpoint = index.resolve(ref, 'Endpoint', fullUrl);
      if (endpoint === undefined) {
        if (isActive(org)) out.reject(`${label(org)} (${str(org.name) ?? 'no name'}): ${ref} is not in the bundle`);
        continue;
      }
      let orgs = organizationsOf.get(endpoint);
      if (!orgs) organizationsOf.set(endpoint, (orgs = new Set<Resource>()));
      orgs.add(org); // a Set: an endpoint shared by thousands of organisations stays linear
    }
  }

  for (const { resource: endpoint } of entries) {
    if (!isType(endpoint, 'Endpoint') || !isActive(endpoint)) continue;
    const paired = [...(organizationsOf.get(endpoint) ?? [])];
    const managing = managingOrganization(endpoint, index);
    if (managing !== undefined && !paired.includes(managing)) paired.push(managing);
    const orgs = paired.filter(isActive);
    // An Endpoint that serves only inactive Organizations is retired with them.
    if (paired.length > 0 && orgs.length === 0) continue;
    if (orgs.length === 0) {
      out.add({ name: endpoint.name, fhirBaseUrl: endpoint.address }, label(endpoint));
      continue;
    }
    for (const org of orgs) {
      out.add(
        {
          name: str(org.name) ?? endpoint.name,
          fhirBaseUrl: endpoint.address,
          aliases: aliasesOf(org),
          ...pickLocation(org.address),
          npis: npisOf(org),
        },
        `${label(endpoint)} (${label(org)})`,
      );
    }
  }
  return out.result();
}
