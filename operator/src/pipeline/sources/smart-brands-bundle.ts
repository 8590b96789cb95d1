// The HL7 SMART App Launch User-access Brands Bundle (STU 2.2): Organizations (brands) with the
// organization-brand and organization-portal extensions, and the Endpoints they reference. A catalog brand is
// one FHIR system, so each (brand, Endpoint) pair becomes a row; deduplication later folds brands that share
// an Endpoint (the spec's "co-equal brands") into one, keeping the other names as aliases. Rows carry the
// brand's NPIs, with those of the affiliates reached through it, and the ZIP code of its located address.
import type { ParsedSource } from '../types.js';
import { RowCollector, isRecord, type CandidateRow } from './collector.js';
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

const FORMAT = 'smart-brands-bundle';
const BRAND_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/organization-brand';
const PORTAL_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/organization-portal';
// A partOf chain longer than this is a cycle or a mistake; real hierarchies are two or three levels deep.
const MAX_PARENT_DEPTH = 8;

interface Portal {
  url?: string;
  logo?: string;
  endpoints: Resource[];
}

/** Sub-extension values of the Organization's extensions with the given canonical URL, one map per extension. */
function extensionsOf(organization: Resource, url: string): Map<string, unknown[]>[] {
  return list(organization.extension)
    .filter((ext) => isRecord(ext) && ext.url === url)
    .map((ext) => {
      const values = new Map<string, unknown[]>();
      for (const sub of list((ext as Resource).extension)) {
        if (!isRecord(sub) || typeof sub.url !== 'string') continue;
        const value = sub.valueUrl ?? sub.valueString ?? sub.valueReference;
        values.set(sub.url, [...(values.get(sub.url) ?? []), value]);
      }
      return values;
    });
}

const firstString = (values: unknown[] | undefined): string | undefined =>
  (values ?? []).map(str).find((v) => v !== undefined);

export function parseSmartBrandsBundle(text: string): ParsedSource {
  const entries = readBundle(text, FORMAT);
  const index = new ResourceIndex(entries);
  const out = new RowCollector();
  const organizations = entries.filter((e) => isType(e.resource, 'Organization'));
  const referenced = new Set<Resource>();
  // Rows are held per brand until the affiliates have added their names to them.
  const rowsOf = new Map<Resource, { row: CandidateRow; where: string }[]>();
  const affiliates: Resource[] = [];

  for (const { resource: org, fullUrl } of organizations) {
    const resolve = (ref: string): Resource | undefined => index.resolve(ref, 'Endpoint', fullUrl);
    const portalExtensions = extensionsOf(org, PORTAL_EXTENSION);
    const portals: Portal[] = portalExtensions.map((p) => {
      const portal: Portal = { endpoints: [] };
      const url = firstString(p.get('portalUrl'));
      const logo = firstString(p.get('portalLogo'));
      if (url !== undefined) portal.url = url;
      if (logo !== undefined) portal.logo = logo;
      for (const ref of referencesIn(p.get('portalEndpoint') ?? [])) {
        const endpoint = resolve(ref);
        if (endpoint !== undefined) portal.endpoints.push(endpoint);
      }
      return portal;
    });
    // Organization.endpoint and every portalEndpoint, in that order, each reference once.
    const portalRefs = portalExtensions.flatMap((p) => referencesIn(p.get('portalEndpoint') ?? []));
    const refs = [...new Set([...referencesIn(org.endpoint), ...portalRefs])];
    for (const ref of refs) {
      const endpoint = resolve(ref);
      if (endpoint !== undefined) referenced.add(endpoint);
    }
    if (!isActive(org)) continue;
    if (refs.length === 0) {
      if (org.partOf !== undefined) affiliates.push(org);
      else out.reject(`${label(org)} (${str(org.name) ?? 'no name'}): references no Endpoint`);
      continue;
    }
    const brandLogo = firstString(extensionsOf(org, BRAND_EXTENSION).flatMap((b) => b.get('brandLogo') ?? []));
    const location = pickLocation(org.address);
    const rows: { row: CandidateRow; where: string }[] = [];
    const seen = new Set<Resource>();
    for (const ref of refs) {
      const endpoint = resolve(ref);
      if (endpoint === undefined) {
        out.reject(`${label(org)} (${str(org.name) ?? 'no name'}): ${ref} is not in the bundle`);
        continue;
      }
      if (seen.has(endpoint) || !isActive(endpoint)) continue;
      seen.add(endpoint);
      // The portal that lists this Endpoint, else the brand's first portal (Organization.endpoint alone).
      const portal = portals.find((p) => p.endpoints.includes(endpoint)) ?? portals.find((p) => p.url !== undefined);
      rows.push({
        where: `${label(org)} → ${label(endpoint)}`,
        row: {
          name: org.name,
          fhirBaseUrl: endpoint.address,
          aliases: aliasesOf(org),
          ...location,
          npis: npisOf(org),
          portalUrl: portal?.url,
          // The brand's own artwork; a portal logo only stands in when the brand has none.
          logoUrl: brandLogo ?? portal?.logo,
        },
      });
    }
    rowsOf.set(org, rows);
  }

  for (const affiliate of affiliates) {
    const parent = brandWithEndpoints(affiliate, index, rowsOf);
    if (parent === undefined) {
      out.reject(
        `${label(affiliate)} (${str(affiliate.name) ?? 'no name'}): neither it nor its parent has an Endpoint`,
      );
      continue;
    }
    // An affiliate without its own Endpoint is reached through its parent's: users search for it by its name or
    // its NPI. Pushed in place: rebuilding the arrays per affiliate was quadratic in a brand's affiliates.
    const npis = npisOf(affiliate);
    for (const { row } of parent) {
      (row.aliases ??= []).push(affiliate.name, ...aliasesOf(affiliate));
      if (npis.length > 0) (row.npis ??= []).push(...npis);
    }
  }

  for (const rows of rowsOf.values()) for (const { row, where } of rows) out.add(row, where);
  for (const { resource } of entries) {
    if (isType(resource, 'Endpoint') && isActive(resource) && !referenced.has(resource)) {
      // The spec requires a brand for every Endpoint; an orphan has no name a user would recognise.
      out.reject(`${label(resource)}: no Organization references it`);
    }
  }
  return out.result();
}

/** The nearest active ancestor (via partOf) that has rows of its own. */
function brandWithEndpoints(
  affiliate: Resource,
  index: ResourceIndex,
  rowsOf: Map<Resource, { row: CandidateRow }[]>,
): { row: CandidateRow }[] | undefined {
  let current = affiliate;
  for (let depth = 0; depth < MAX_PARENT_DEPTH; depth += 1) {
    const ref = referencesIn(current.partOf)[0];
    if (ref === undefined) return undefined;
    const parent = index.resolve(ref, 'Organization', index.fullUrlOf(current));
    if (parent === undefined || !isActive(parent)) return undefined;
    const rows = rowsOf.get(parent);
    if (rows !== undefined && rows.length > 0) return rows;
    current = parent;
  }
  return undefined;
}
