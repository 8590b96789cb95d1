// Find by address or identifier: a `q` that is a URL or a host name finds the brands whose FHIR
// base URL or portal host match it; a 10-digit `q` finds the brands whose source rows carried it as an NPI
// (the operator keeps only valid NPIs, so an invalid one finds nothing here and is searched as a word).
//
// Hosts are stored reversed ("mychart.example.org" → "org.example.mychart") and sorted, so a host and all
// its subdomains form one contiguous range: "example.org" finds mychart.example.org and fhir.example.org by
// one binary search. Brands sharing a host (a vendor's multi-tenant endpoint) share one entry.
import type { CatalogBrand } from '#core/catalog/model.js';
import { normaliseFhirBaseUrl } from '#core/catalog/fhir-url.js';

/** How well an address matched, best first; the ranking tier of the brand. */
export const SAME_FHIR_URL = 0;
export const SAME_FHIR_HOST = 1;
export const SAME_PORTAL_HOST = 2;
export const SUBDOMAIN = 3;

const FHIR = 1;
const PORTAL = 2;

// A host name with a dot and an alphabetic top-level label, optionally a port and a path: what people paste
// from an address bar without the scheme. Anything with a scheme is read as a URL instead.
const HOST_NAME = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]\.?(?::\d{1,5})?(?:[/?#]\S*)?$/i;
const WITH_SCHEME = /^https?:\/\/\S+$/i;
const NPI_SHAPE = /^\d{10}$/;

export interface AddressQuery {
  /** Lower-case host name. */
  host: string;
  /** The FHIR system identity the query names (docs/operator.md). */
  fhirBaseUrl: string;
}

/** The host and URL a query names when it is a URL or a host name; null for anything else. */
export function addressOf(q: string): AddressQuery | null {
  if (!WITH_SCHEME.test(q) && !HOST_NAME.test(q)) return null;
  const fhirBaseUrl = normaliseFhirBaseUrl(q);
  if (fhirBaseUrl === null) return null;
  const host = hostOf(fhirBaseUrl);
  return host === null ? null : { host: host.replace(/\.$/, ''), fhirBaseUrl };
}

export const isNpiShaped = (q: string): boolean => NPI_SHAPE.test(q);

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return null;
  }
}

const reversed = (host: string): string => host.split('.').reverse().join('.');

export class AddressIndex {
  private constructor(
    /** Distinct reversed hosts, sorted. */
    private readonly hosts: readonly string[],
    /** hosts.length + 1 offsets into brandNumbers / kinds. */
    private readonly start: Uint32Array,
    private readonly brandNumbers: Uint32Array,
    /** FHIR and/or PORTAL: how the brand uses the host. */
    private readonly kinds: Uint8Array,
    private readonly fhirBaseUrls: readonly string[],
    private readonly npis: ReadonlyMap<string, Uint32Array>,
  ) {}

  /** `brands` in the index's rank order. */
  static build(brands: readonly CatalogBrand[]): AddressIndex {
    const byHost = new Map<string, Map<number, number>>();
    const add = (host: string | null, b: number, kind: number) => {
      if (host === null || host === '') return;
      const key = reversed(host);
      let users = byHost.get(key);
      if (!users) byHost.set(key, (users = new Map<number, number>()));
      users.set(b, (users.get(b) ?? 0) | kind);
    };
    const npiLists = new Map<string, number[]>();
    brands.forEach((brand, b) => {
      add(hostOf(brand.fhirBaseUrl), b, FHIR);
      if (brand.portalUrl) add(hostOf(brand.portalUrl), b, PORTAL);
      for (const npi of brand.npis ?? []) {
        const list = npiLists.get(npi);
        if (list) list.push(b);
        else npiLists.set(npi, [b]);
      }
    });
    const hosts = [...byHost.keys()].sort();
    const start = new Uint32Array(hosts.length + 1);
    const numbers: number[] = [];
    const kinds: number[] = [];
    hosts.forEach((host, h) => {
      // Brand numbers ascend within a host (Map insertion follows the brand loop).
      for (const [b, kind] of byHost.get(host)!) {
        numbers.push(b);
        kinds.push(kind);
      }
      start[h + 1] = numbers.length;
    });
    const npis = new Map([...npiLists].map(([npi, list]) => [npi, Uint32Array.from(list)]));
    return new AddressIndex(
      hosts,
      start,
      Uint32Array.from(numbers),
      Uint8Array.from(kinds),
      brands.map((b) => b.fhirBaseUrl),
      npis,
    );
  }

  /** Calls `found(b, tier)` for every brand the address matches, with the tier of the match (SAME_FHIR_URL…SUBDOMAIN).
   * */
  matches(address: AddressQuery, found: (b: number, tier: number) => void): void {
    const key = reversed(address.host);
    // The host itself, then its subdomains: two ranges, since "org.example-x" sorts between them.
    const exact = this.firstAtOrAfter(key);
    if (this.hosts[exact] === key)
      this.each(exact, (b, kind) =>
        found(
          b,
          (kind & FHIR) === 0
            ? SAME_PORTAL_HOST
            : this.fhirBaseUrls[b] === address.fhirBaseUrl
              ? SAME_FHIR_URL
              : SAME_FHIR_HOST,
        ),
      );
    const below = `${key}.`;
    for (let h = this.firstAtOrAfter(below); h < this.hosts.length && this.hosts[h]!.startsWith(below); h++)
      this.each(h, (b) => found(b, SUBDOMAIN));
  }

  private each(h: number, visit: (b: number, kind: number) => void): void {
    for (let i = this.start[h]!; i < this.start[h + 1]!; i++) visit(this.brandNumbers[i]!, this.kinds[i]!);
  }

  private firstAtOrAfter(key: string): number {
    const hosts = this.hosts;
    let lo = 0;
    let hi = hosts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (hosts[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The brands (ascending numbers) whose source rows carried this NPI; empty when none. */
  npiMatches(npi: string): Uint32Array {
    return this.npis.get(npi) ?? EMPTY;
  }
}

const EMPTY = new Uint32Array(0);
