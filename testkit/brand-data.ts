// The vendor and directory brand lists the tests and benchmarks read, from the repository's fixtures in
// test/fixtures/brands, gzip-compressed (`<folder>/<file>.json.gz`). Files are named here as they were upstream,
// without `.gz`. What each folder holds, where it comes from and under which licence is in
// test/fixtures/brands/SOURCES.md: the Lantern lists and the HL7 example bundles are copies, content unchanged,
// except Lantern's four copies of the Oracle Health and Epic lists; those and the Oracle Health and Epic lists are
// synthetic (scripts/synthesize-brand-fixtures.mjs), of the same shape.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { PlatformType } from '#core/catalog/model.js';
import { repoRoot } from '#core/infra/repo-root.js';
import type { LoadedSource, ParsedSource } from '../operator/src/pipeline/types.js';

export const BRAND_DATA = path.join(repoRoot(), 'test', 'fixtures', 'brands');

/** The text of a fixture, e.g. `oracle-health/millennium_patient_r4_endpoints.json` (read from its `.gz`). */
export function brandFile(relative: string): string {
  return gunzipSync(readFileSync(path.join(BRAND_DATA, `${relative}.gz`))).toString('utf8');
}

/** The Lantern EndpointSources lists that hold data (the upstream LanternEndpointSources.json is empty). */
export function lanternFiles(): string[] {
  return readdirSync(path.join(BRAND_DATA, 'lantern-prod_resources'))
    .filter((f) => f.endsWith('EndpointSources.json.gz'))
    .map((f) => f.slice(0, -'.gz'.length))
    .filter((f) => lanternFile(f).trim() !== '')
    .sort();
}

/**
 * Lantern's copies of the Oracle Health and Epic lists, whose fixtures are synthetic (SOURCES.md): no catalog that
 * claims to be real may publish them.
 */
export const SYNTHETIC_LANTERN_FILES: readonly string[] = [
  'Cerner_Corporation_EndpointSources.json',
  'Cerner_Corporation_1_EndpointSources.json',
  'Epic_Systems_Corporation_EndpointSources.json',
  'Epic_Systems_Corporation_1_EndpointSources.json',
];

export const lanternFile = (name: string): string => brandFile(path.join('lantern-prod_resources', name));

export function loaded(
  name: string,
  parsed: ParsedSource,
  options: { priority?: number; platformType?: PlatformType } = {},
): LoadedSource {
  return { name, parsed, priority: options.priority ?? 100, platformType: options.platformType ?? 'OTHER' };
}

/** RFC 4180 field quoting, for building CSV text in tests. */
export function csvField(value: string | undefined): string {
  if (value === undefined) return '';
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** The Epic brands (2026) table's rows, Epic's and Oracle Health's (synthetic: see SOURCES.md), as CSV text. */
export function epicBrands2026Csv(): { csv: string; rows: number } {
  const decoded = JSON.parse(brandFile('epic-brands-2026/smart-endpoints.decoded.json')) as {
    name: string;
    fhirBaseUrl: string;
    source: 'epic' | 'cerner';
    city?: string;
    state?: string;
  }[];
  const lines = decoded.map((r) =>
    [r.name, r.fhirBaseUrl, r.source === 'epic' ? 'EPIC' : 'CERNER', r.city, r.state].map(csvField).join(','),
  );
  return { csv: ['name,fhirBaseUrl,platformType,city,state', ...lines].join('\r\n'), rows: decoded.length };
}
