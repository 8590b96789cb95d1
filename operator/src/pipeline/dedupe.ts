// Deduplication: one catalog brand per FHIR system (normalised FHIR base URL). The row from the most trusted
// source names the brand; every other name for the same system stays searchable as an alias.
import type { CatalogBrand, PlatformType } from '../../../api/src/catalog/model.js';
import { brandIdFor } from './ids.js';
import { cleanName, inferPlatformType, nameKey, normaliseFhirBaseUrl, normaliseState } from './normalise.js';
import type { LoadedSource, SourceRow } from './types.js';

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
  /** In the order the sources were given. */
  perSource: SourceSummary[];
}

interface Group {
  fhirBaseUrl: string;
  name: string;
  nameKey: string;
  aliases: string[];
  aliasKeys: Set<string>;
  platformType: PlatformType;
  city: string | null;
  state: string | null;
  portalUrl: string | null;
  logoUrl: string | null;
}

const isHttpUrl = (value: string): boolean => {
  try {
    const { protocol } = new URL(value);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
};

// The contract allows `https:` and `data:` artwork; plain http would be fetched over an unauthenticated channel.
const isLogoUrl = (value: string): boolean => /^data:image\//i.test(value) || (/^https:/i.test(value) && isHttpUrl(value));

function addAlias(group: Group, raw: string): void {
  const alias = cleanName(raw);
  const key = alias.toLowerCase();
  if (alias === '' || key === group.nameKey || group.aliasKeys.has(key)) return;
  group.aliasKeys.add(key);
  group.aliases.push(alias);
}

/**
 * Fills the fields the group still lacks from a lower-ranked row. City and state travel together: a city is
 * only taken from a row that does not place it in another state, so no brand says "Boston, WI".
 */
function fillFrom(group: Group, row: SourceRow): void {
  const city = row.city === undefined ? '' : cleanName(row.city);
  const state = row.state === undefined ? null : normaliseState(row.state);
  if (group.state === null && group.city === null) {
    group.state = state;
    group.city = city === '' ? null : city;
  } else if (group.city === null) {
    if (city !== '' && (state === null || state === group.state)) group.city = city;
  } else if (group.state === null) {
    if (state !== null && (city === '' || nameKey(city) === nameKey(group.city))) group.state = state;
  }
  if (group.portalUrl === null && row.portalUrl !== undefined && isHttpUrl(row.portalUrl.trim())) {
    group.portalUrl = row.portalUrl.trim();
  }
  if (group.logoUrl === null && row.logoUrl !== undefined && isLogoUrl(row.logoUrl.trim())) group.logoUrl = row.logoUrl.trim();
}

export function mergeSources(sources: LoadedSource[]): MergeResult {
  const perSource: SourceSummary[] = sources.map((s) => ({
    name: s.name,
    rows: s.parsed.rows.length + s.parsed.rejected,
    rejected: s.parsed.rejected,
    kept: 0,
  }));
  // Highest priority first (lowest number); ties keep the order the sources were given (a stable sort).
  const ranked = sources.map((source, i) => ({ source, summary: perSource[i]! })).sort((a, b) => a.source.priority - b.source.priority);

  const groups = new Map<string, Group>();
  let folded = 0;
  for (const { source, summary } of ranked) {
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
        // Rows arrive in rank order, so the first row seen for a FHIR system is the winner.
        group = {
          fhirBaseUrl, name, nameKey: name.toLowerCase(), aliases: [], aliasKeys: new Set(),
          platformType: row.platformType ?? inferPlatformType(fhirBaseUrl) ?? source.platformType,
          city: null, state: null, portalUrl: null, logoUrl: null,
        };
        groups.set(fhirBaseUrl, group);
      } else {
        folded += 1;
        addAlias(group, name);
      }
      for (const alias of row.aliases ?? []) addAlias(group, alias);
      fillFrom(group, row);
    }
  }

  const brands = [...groups.values()].map(toBrand);
  brands.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { brands, duplicatesMerged: folded, perSource };
}

function toBrand(group: Group): MergedBrand {
  const brand: MergedBrand = {
    id: brandIdFor(group.fhirBaseUrl),
    name: group.name,
    aliases: group.aliases,
    platformType: group.platformType,
    fhirBaseUrl: group.fhirBaseUrl,
    city: group.city,
    state: group.state,
    portalUrl: group.portalUrl,
  };
  if (group.logoUrl !== null) brand.logoUrl = group.logoUrl;
  return brand;
}
