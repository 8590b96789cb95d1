// What the two FHIR Bundle formats share: reading the Bundle, resolving references between its entries (as
// vendors actually write them, not only as FHIR says they should), picking a brand's location, and reading an
// Organization's NPIs.
import { stateCode } from '#core/catalog/states.js';
import { isRecord, parseJson } from './collector.js';

export type Resource = Record<string, unknown>;

export interface Entry {
  fullUrl?: string;
  resource: Resource;
}

/** The Bundle's entries that carry a resource; throws when the text is not a FHIR Bundle at all. */
export function readBundle(text: string, format: string): Entry[] {
  const bundle = parseJson(text, format);
  if (!isRecord(bundle) || bundle.resourceType !== 'Bundle') {
    throw new Error(`${format}: expected a FHIR Bundle (an object with "resourceType": "Bundle")`);
  }
  if (bundle.entry === undefined) return [];
  if (!Array.isArray(bundle.entry)) throw new Error(`${format}: Bundle.entry must be an array`);
  const entries: Entry[] = [];
  for (const item of bundle.entry) {
    if (!isRecord(item) || !isRecord(item.resource)) continue;
    const entry: Entry = { resource: item.resource };
    if (typeof item.fullUrl === 'string') entry.fullUrl = item.fullUrl;
    entries.push(entry);
  }
  return entries;
}

export const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;

export const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

export const isType = (resource: Resource, type: string): boolean => resource.resourceType === type;

/** `Organization/abc` for messages. */
export const label = (resource: Resource): string =>
  `${String(resource.resourceType)}/${typeof resource.id === 'string' ? resource.id : '?'}`;

const isLetter = (code: number) => (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);

/**
 * `Type/id` at the end of a reference, ignoring a version suffix (`.../Endpoint/x/_history/2`): the last
 * segments read from the right, so the work is linear in the reference. (The expression this replaces,
 * `([A-Za-z]+)\/([^/]+)(?:\/_history\/[^/]+)?$`, retried from every letter of a long run: 100 kB took 16 s.)
 * The type is the run of letters that ends its segment (`a1Endpoint/x` → `Endpoint`).
 */
export function typeAndIdOf(reference: string): { type: string; id: string } | undefined {
  const slashes: number[] = []; // the last three, right to left
  for (
    let at = reference.lastIndexOf('/');
    at >= 0 && slashes.length < 3;
    at = at > 0 ? reference.lastIndexOf('/', at - 1) : -1
  )
    slashes.push(at);
  const segment = (i: number) => reference.slice(slashes[i]! + 1, i === 0 ? reference.length : slashes[i - 1]);
  const lettersBefore = (end: number) => {
    let start = end;
    while (start > 0 && isLetter(reference.charCodeAt(start - 1))) start--;
    return reference.slice(start, end);
  };
  // `Type/id/_history/version` starts further left, so it wins over `Type/id` as the leftmost match did.
  if (slashes.length === 3 && segment(0) !== '' && segment(1) === '_history' && segment(2) !== '') {
    const type = lettersBefore(slashes[2]!);
    if (type !== '') return { type, id: segment(2) };
  }
  if (slashes.length > 0 && segment(0) !== '') {
    const type = lettersBefore(slashes[0]!);
    if (type !== '') return { type, id: segment(0) };
  }
  return undefined;
}

/** Finds the Bundle entry a reference points to, by full URL, by URL relative to the referrer, or by type and id. */
export class ResourceIndex {
  private readonly byFullUrl = new Map<string, Resource>();
  private readonly byTypeAndId = new Map<string, Resource>();
  private readonly fullUrls = new Map<Resource, string>();

  constructor(entries: readonly Entry[]) {
    for (const { fullUrl, resource } of entries) {
      if (fullUrl !== undefined) this.fullUrls.set(resource, fullUrl);
      if (fullUrl !== undefined && !this.byFullUrl.has(fullUrl)) this.byFullUrl.set(fullUrl, resource);
      const key = `${String(resource.resourceType)}/${String(resource.id)}`;
      // Aggregated bundles may repeat an id across servers; the first one wins unless a full URL says otherwise.
      if (typeof resource.id === 'string' && !this.byTypeAndId.has(key)) this.byTypeAndId.set(key, resource);
    }
  }

  /** The entry's fullUrl, the base its relative references resolve against. */
  fullUrlOf(resource: Resource): string | undefined {
    return this.fullUrls.get(resource);
  }

  resolve(reference: string, type: string, referrerFullUrl?: string): Resource | undefined {
    const direct = this.byFullUrl.get(reference);
    if (direct !== undefined) return isType(direct, type) ? direct : undefined;
    // A relative reference is relative to the referrer's server base (FHIR R4 §2.36.0.1 "Resolving references").
    if (referrerFullUrl !== undefined && !/^[a-z][a-z0-9+.-]*:/i.test(reference)) {
      const base = /^(.*)\/[A-Za-z]+\/[^/]+$/.exec(referrerFullUrl)?.[1];
      const resolved = base === undefined ? undefined : this.byFullUrl.get(`${base}/${reference}`);
      if (resolved !== undefined) return isType(resolved, type) ? resolved : undefined;
    }
    const tail = typeAndIdOf(reference);
    if (tail === undefined || tail.type !== type) return undefined;
    return this.byTypeAndId.get(`${type}/${tail.id}`);
  }
}

/** The reference strings of a FHIR Reference or a list of them. */
export function referencesIn(value: unknown): string[] {
  const refs: string[] = [];
  for (const item of Array.isArray(value) ? value : [value]) {
    const ref = isRecord(item) ? str(item.reference) : undefined;
    if (ref !== undefined) refs.push(ref);
  }
  return refs;
}

// Address.country values that mean the United States or one of its territories (vendors write the name out).
const US_COUNTRIES = new Set([
  'us',
  'usa',
  'u.s.',
  'u.s.a.',
  'united states',
  'united states of america',
  'puerto rico',
  'guam',
  'american samoa',
  'northern mariana islands',
  'u.s. virgin islands',
  'us virgin islands',
  'virgin islands',
]);

export interface Location {
  city?: string;
  /** As the source wrote it; known to normalise to a US state code. */
  state?: string;
  /** As the source wrote it (the row collector keeps it only when it is a known US ZIP code). */
  postalCode?: string;
}

/**
 * The first address with both a city and a US state, else the first with a US state, else the first with a
 * city, else the first US one with a postal code. A state outside the US (Canada's QC, Australia's WA) is not
 * taken for a US one, nor a postal code outside it for a ZIP code. The postal code comes from the same address
 * as the city and state, so the three never describe two places.
 */
export function pickLocation(addresses: unknown): Location {
  const candidates = list(addresses)
    .filter(isRecord)
    .map((address) => {
      const country = str(address.country)?.toLowerCase();
      const inUs = country === undefined || US_COUNTRIES.has(country);
      const state = str(address.state);
      return {
        city: str(address.city),
        state: inUs && state !== undefined && stateCode(state) !== undefined ? state : undefined,
        postalCode: inUs ? str(address.postalCode) : undefined,
      };
    });
  const best =
    candidates.find((c) => c.city !== undefined && c.state !== undefined) ??
    candidates.find((c) => c.state !== undefined) ??
    candidates.find((c) => c.city !== undefined) ??
    candidates.find((c) => c.postalCode !== undefined);
  if (best === undefined) return {};
  const location: Location = {};
  if (best.city !== undefined) location.city = best.city;
  if (best.state !== undefined) location.state = best.state;
  if (best.postalCode !== undefined) location.postalCode = best.postalCode;
  return location;
}

/** The identifier system of US National Provider Identifiers (FHIR R4 US Core). */
export const NPI_SYSTEM = 'http://hl7.org/fhir/sid/us-npi';

/** The values of an Organization's NPI identifiers, unchecked (the row collector keeps the valid ones). */
export const npisOf = (organization: Resource): unknown[] =>
  list(organization.identifier)
    .filter((identifier) => isRecord(identifier) && identifier.system === NPI_SYSTEM)
    .map((identifier) => (identifier as Resource).value);

/** Inactive resources are skipped: an Endpoint whose status is set and not `active`, an Organization with active:
 * false. */
export function isActive(resource: Resource): boolean {
  if (isType(resource, 'Endpoint')) return resource.status === undefined || resource.status === 'active';
  return resource.active !== false;
}

/** Organization.alias as strings. */
export const aliasesOf = (organization: Resource): string[] =>
  list(organization.alias).filter((a): a is string => typeof a === 'string');
