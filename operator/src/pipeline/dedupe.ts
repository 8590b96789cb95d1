// Deduplication: one catalog brand per FHIR system (normalised FHIR base URL). The most trusted source names
// the brand; every other name for the same system stays searchable as an alias (up to MAX_ALIASES).
//
// Naming, in order:
// 1. A system with more than MULTI_TENANT_THRESHOLD distinct names is a vendor's shared endpoint (athenahealth
//    serves ~17,700 practices from one URL), not one health system: it is named after the vendor.
// 2. Otherwise the best-ranked source that lists the system names it. When that source gives the system several
//    names (Epic's 2022 list puts seven Bronson organisations on hygieia.bronsonhg.org), the name that best
//    matches the FHIR host wins ("Bronson Healthcare Group" ↔ bronsonhg); ties keep the source's row order.
//    A lower-ranked source never names a system a better one lists, however well its names match.
//
// Identifiers and place: every valid NPI any row gives (up to MAX_NPIS); the ZIP code of the best-ranked row
// that has one in the brand's state; the brand's location from that ZIP code, else from its city and state.
import type { CatalogBrand, PlatformType } from '#core/catalog/model.js';
import { words } from '#core/catalog/fold.js';
import { brandIdFor } from './ids.js';
import { cleanName, inferPlatformType, normaliseFhirBaseUrl } from './normalise.js';
import { fillPlace, locate } from './place.js';
import type { LoadedSource, SourceRow } from './types.js';

/** Aliases stored per brand, in merge order (best sources first); the rest are dropped and counted. */
export const MAX_ALIASES = 50;
/** More distinct names than this on one FHIR system make it a vendor's shared (multi-tenant) endpoint. */
export const MULTI_TENANT_THRESHOLD = 50;
/**
 * NPIs stored per brand: the first ones in merge order (best sources first), then sorted; the rest are dropped
 * and counted. A vendor's shared endpoint may carry one per practice (thousands): the snapshot keeps a brand
 * small, as MAX_ALIASES does for its names.
 */
export const MAX_NPIS = 50;

/** How end users know each platform's vendor; null when the platform type names no vendor. */
export const PLATFORM_DISPLAY_NAMES: Readonly<Record<PlatformType, string | null>> = {
  EPIC: 'Epic',
  CERNER: 'Oracle Health',
  ATHENAHEALTH: 'athenahealth',
  MEDITECH: 'MEDITECH',
  NEXTGEN: 'NextGen Healthcare',
  VERADIGM: 'Veradigm',
  ALTERA: 'Altera Digital Health',
  ECLINICALWORKS: 'eClinicalWorks',
  PRACTICE_FUSION: 'Practice Fusion',
  GREENWAY: 'Greenway Health',
  MODMED: 'ModMed',
  MEDHOST: 'MEDHOST',
  NETSMART: 'Netsmart',
  OTHER: null,
};

/** A brand before its logo is rendered: `logoUrl` is the best source artwork (`https:` or `data:`). */
export type MergedBrand = Omit<CatalogBrand, 'logo'> & { logoUrl?: string };

export interface SourceSummary {
  name: string;
  /** Rows the source gave, usable or not. */
  rows: number;
  /** Rows skipped by the parser or here (no name, no usable FHIR base URL, unknown platform). */
  rejected: number;
  /** Rows that went into the merge (rows − rejected), including those folded into another source's brand. */
  kept: number;
}

export interface MergeResult {
  /** Sorted by id, so the same sources always give the same list. */
  brands: MergedBrand[];
  /** Rows folded into a brand another row had already created. */
  duplicatesMerged: number;
  /** Brands that had more than MAX_ALIASES other names and kept only the first MAX_ALIASES. */
  aliasesCapped: number;
  /** Brands whose rows gave more than MAX_NPIS distinct NPIs and kept only the first MAX_NPIS. */
  npisCapped: number;
  /** In the order the sources were given. */
  perSource: SourceSummary[];
}

interface Group {
  fhirBaseUrl: string;
  /** Rank of the best source listing this system (the first one seen, since rows arrive in rank order). */
  bestRank: number;
  /** The distinct row names the best source gives this system, in row order: the candidates for its name. */
  candidates: string[];
  /** Every distinct name (row names and their aliases) from every source, in merge order, as first written. */
  names: string[];
  /** The key of every name in `names` → whether it is among the candidates yet. */
  nameKeys: Map<string, boolean>;
  platformType: PlatformType;
  city: string | null;
  state: string | null;
  portalUrl: string | null;
  logoUrl: string | null;
  /** Every distinct NPI of every row, in merge order. */
  npis: Set<string>;
  postalCode: string | null;
}

const isHttpUrl = (value: string): boolean => {
  try {
    const { protocol } = new URL(value);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
};

// A source may give `https:` and `data:` artwork (docs/operator.md); plain http would be fetched over an unauthenticated channel.
const isLogoUrl = (value: string): boolean =>
  /^data:image\//i.test(value) || (/^https:/i.test(value) && isHttpUrl(value));

function addName(group: Group, raw: string): void {
  const name = cleanName(raw);
  const key = name.toLowerCase();
  if (name === '' || group.nameKeys.has(key)) return;
  group.nameKeys.set(key, false);
  group.names.push(name);
}

/** Fills the fields the group still lacks from a lower-ranked row (place: see place.ts), and adds its NPIs. */
function fillFrom(group: Group, row: SourceRow): void {
  for (const npi of row.npis ?? []) group.npis.add(npi);
  fillPlace(group, row);
  if (group.portalUrl === null && row.portalUrl !== undefined && isHttpUrl(row.portalUrl.trim())) {
    group.portalUrl = row.portalUrl.trim();
  }
  if (group.logoUrl === null && row.logoUrl !== undefined && isLogoUrl(row.logoUrl.trim()))
    group.logoUrl = row.logoUrl.trim();
}

export function mergeSources(sources: LoadedSource[]): MergeResult {
  const perSource: SourceSummary[] = sources.map((s) => ({
    name: s.name,
    rows: s.parsed.rows.length + s.parsed.rejected,
    rejected: s.parsed.rejected,
    kept: 0,
  }));
  // Highest priority first (lowest number); ties keep the order the sources were given (a stable sort).
  const ranked = sources
    .map((source, i) => ({ source, summary: perSource[i]! }))
    .sort((a, b) => a.source.priority - b.source.priority);

  const groups = new Map<string, Group>();
  let folded = 0;
  ranked.forEach(({ source, summary }, rank) => {
    for (const row of source.parsed.rows) {
      const fhirBaseUrl = normaliseFhirBaseUrl(row.fhirBaseUrl);
      const name = cleanName(row.name);
      // Parsers already reject these; sources assembled by hand get the same rule.
      if (fhirBaseUrl === null || name === '') {
        summary.rejected += 1;
        continue;
      }
      summary.kept += 1;
      let group = groups.get(fhirBaseUrl);
      if (group === undefined) {
        // Rows arrive in rank order, so the first row seen for a FHIR system decides its platform type.
        group = {
          fhirBaseUrl,
          bestRank: rank,
          candidates: [],
          names: [],
          nameKeys: new Map(),
          platformType: row.platformType ?? inferPlatformType(fhirBaseUrl) ?? source.platformType,
          city: null,
          state: null,
          portalUrl: null,
          logoUrl: null,
          npis: new Set(),
          postalCode: null,
        };
        groups.set(fhirBaseUrl, group);
      } else {
        folded += 1;
      }
      addName(group, name);
      const key = name.toLowerCase();
      if (rank === group.bestRank && group.nameKeys.get(key) === false) {
        group.nameKeys.set(key, true);
        group.candidates.push(name);
      }
      for (const alias of row.aliases ?? []) addName(group, alias);
      fillFrom(group, row);
    }
  });

  let aliasesCapped = 0;
  let npisCapped = 0;
  const brands = [...groups.values()].map((group) => {
    const brand = toBrand(group);
    if (brand.capped) aliasesCapped += 1;
    if (group.npis.size > MAX_NPIS) npisCapped += 1;
    return brand.brand;
  });
  brands.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { brands, duplicatesMerged: folded, aliasesCapped, npisCapped, perSource };
}

// Host labels that say where a FHIR server runs, not whose it is (epicproxy.et0502.epichosted.com,
// fhir.example.org, mychart.example.org). Name words are skipped too when they say only what kind of
// organisation it is: "Health" must not tie "Park Nicollet Health Services" with "HealthPartners" on
// epicproxy.healthpartners.com.
const GENERIC_WORDS = new Set([
  'www',
  'fhir',
  'fhirproxy',
  'proxy',
  'epic',
  'epicproxy',
  'epichosted',
  'mychart',
  'interconnect',
  'api',
  'apis',
  'prod',
  'prd',
  'portal',
  'patient',
  'patients',
  'patientportal',
  'platform',
  'cloud',
  'hosted',
  'secure',
  'public',
  'health',
  'healthcare',
  'medical',
  'medicine',
  'care',
  'clinic',
  'clinics',
  'center',
  'centre',
  'hospital',
  'hospitals',
  'system',
  'systems',
  'services',
  'group',
  'network',
  'physicians',
  'associates',
]);
/** Shorter words than this match too much by prefix ("org", "med", "san"). */
const MIN_MATCH = 4;

/** The words of the FHIR host's labels, without the top-level domain and without generic or numeric parts. */
function hostWords(fhirBaseUrl: string): string[] {
  const labels = new URL(fhirBaseUrl).hostname.split('.');
  if (labels.length > 1) labels.pop();
  return labels
    .flatMap((label) => words(label))
    .filter((w) => w.length >= MIN_MATCH && !/^\d+$/.test(w) && !GENERIC_WORDS.has(w));
}

/** How many distinct words of a name match a host word by prefix, either way ("bronson" ↔ "bronsonhg"). */
function hostScore(name: string, host: readonly string[]): number {
  let score = 0;
  for (const word of new Set(words(name))) {
    if (word.length < MIN_MATCH || GENERIC_WORDS.has(word)) continue;
    if (host.some((label) => label.startsWith(word) || word.startsWith(label))) score += 1;
  }
  return score;
}

/** Among the best source's names, the one that best matches the host; ties keep the source's row order. */
function bestSourceName(group: Group): string {
  const [first] = group.candidates;
  if (group.candidates.length === 1) return first!;
  const host = hostWords(group.fhirBaseUrl);
  if (host.length === 0) return first!;
  let best = first!;
  let bestScore = hostScore(best, host);
  for (const candidate of group.candidates.slice(1)) {
    const score = hostScore(candidate, host);
    if (score > bestScore) [best, bestScore] = [candidate, score];
  }
  return best;
}

/**
 * The name of a vendor's shared endpoint: "athenahealth practices". It is a list of places a patient may have
 * been seen, so it reads as one: the vendor first, because the vendor is the one thing the thousands of
 * practices behind the endpoint have in common and what a patient sees on their portal; "practices" because
 * that is what they are, and says the entry is not one health system. Jargon such as "shared endpoint" or
 * "multi-tenant" means nothing to someone picking where their records are, and a practice count would rename
 * the brand in every snapshot. A platform type that names no vendor falls back to the host's domain.
 */
function sharedEndpointName(group: Group): string {
  const vendor = PLATFORM_DISPLAY_NAMES[group.platformType] ?? registrableDomain(new URL(group.fhirBaseUrl).hostname);
  return `${vendor} practices`;
}

/** The last two labels of a DNS name (patientportal.streamlinemd.com → streamlinemd.com); an IP address as is. */
function registrableDomain(host: string): string {
  if (/^[\d.]+$/.test(host) || host.startsWith('[')) return host;
  return host.split('.').slice(-2).join('.');
}

function toBrand(group: Group): { brand: MergedBrand; capped: boolean } {
  const name = group.names.length > MULTI_TENANT_THRESHOLD ? sharedEndpointName(group) : bestSourceName(group);
  const key = name.toLowerCase();
  const others = group.names.filter((n) => n.toLowerCase() !== key);
  const brand: MergedBrand = {
    id: brandIdFor(group.fhirBaseUrl),
    name,
    aliases: others.length > MAX_ALIASES ? others.slice(0, MAX_ALIASES) : others,
    platformType: group.platformType,
    fhirBaseUrl: group.fhirBaseUrl,
    city: group.city,
    state: group.state,
    portalUrl: group.portalUrl,
  };
  // Fields a brand has no value for are left out rather than null: snapshots of brands without them hash as before.
  if (group.npis.size > 0) brand.npis = [...group.npis].slice(0, MAX_NPIS).sort();
  if (group.postalCode !== null) brand.postalCode = group.postalCode;
  const location = locate(group);
  if (location !== undefined) brand.location = location;
  if (group.logoUrl !== null) brand.logoUrl = group.logoUrl;
  return { brand, capped: others.length > MAX_ALIASES };
}
