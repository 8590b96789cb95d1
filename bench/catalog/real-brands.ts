// Every brand the benchmarks can build from the public lists in /work/shared/data/brands: the sources in the
// order of trust below, parsed and deduplicated by the operator's import pipeline (parseSource +
// mergeSources), so a benchmark indexes or publishes exactly what the operator would.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { CatalogBrand, PlatformType } from '../../core/src/catalog/model.js';
import { repoRoot } from '../../core/src/infra/repo-root.js';
import { mergeSources, parseSource, type LoadedSource, type SourceRow } from '../../operator/src/pipeline/index.js';

export const BRANDS_DIR = path.join(repoRoot(), '..', 'shared', 'data', 'brands');

/** A file in a source format the pipeline parses, or ('rows') in none, read here into rows. */
type SourceFile = { file: string; /** The source's name when the file gives more than one. */ name?: string; platformType: PlatformType } & (
  | { format: 'lantern-endpoints' | 'fhir-endpoint-bundle' }
  | { format: 'rows'; rows: () => SourceRow[] }
);

// The source files are untyped JSON, read once; shapes are checked by use.
type Json = any;

const readText = (file: string) => readFileSync(path.join(BRANDS_DIR, file), 'utf8');
const readJson = (file: string): Json => JSON.parse(readText(file));
const optional = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value : undefined);
const row = (fhirBaseUrl: unknown, name: unknown, city?: unknown, state?: unknown): SourceRow => ({
  fhirBaseUrl: String(fhirBaseUrl ?? ''),
  name: String(name ?? ''),
  ...(optional(city) ? { city: optional(city)! } : {}),
  ...(optional(state) ? { state: optional(state)! } : {}),
});

// Lantern's lists are per developer; the file name says which EHR a row belongs to.
const PLATFORM_BY_FILE: [RegExp, PlatformType][] = [
  [/^Epic/, 'EPIC'], [/^Cerner/, 'CERNER'], [/^(athena|AthenaClinicals)/i, 'ATHENAHEALTH'], [/MEDITECH/, 'MEDITECH'],
  [/^NextGen/, 'NEXTGEN'], [/^Veradigm/, 'VERADIGM'], [/^Altera/, 'ALTERA'], [/^eClinicalWorks/, 'ECLINICALWORKS'],
  [/^Practice_Fusion/, 'PRACTICE_FUSION'], [/^Greenway/, 'GREENWAY'], [/^Modernizing_Medicine/, 'MODMED'],
  [/^MEDHOST/, 'MEDHOST'], [/^Netsmart/, 'NETSMART'],
];

/** Best sources first: the best-ranked source that lists a FHIR system names its brand. */
function sourceFiles(): SourceFile[] {
  // Epic's 2026 User-access Brands rows go in one per brand, not as the DERIVED file's groups: that file's
  // "first name = name" is the rule mergeSources replaces with host matching (hygieia.bronsonhg.org is "Bronson").
  const smart2026 = (source: 'epic' | 'cerner') => (): SourceRow[] =>
    readJson('epic-brands-2026/smart-endpoints.decoded.json').filter((r: Json) => r.source === source).map((r: Json) => row(r.fhirBaseUrl, r.name, r.city, r.state));
  const files: SourceFile[] = [
    { file: 'epic-brands-2026/smart-endpoints.decoded.json', name: 'epic-brands-2026 (Epic rows)', platformType: 'EPIC', format: 'rows', rows: smart2026('epic') },
    { file: 'epic-brands-2026/smart-endpoints.decoded.json', name: 'epic-brands-2026 (Oracle Health rows)', platformType: 'CERNER', format: 'rows', rows: smart2026('cerner') },
  ];
  const bundles: [string, PlatformType][] = [
    ['oracle-health/millennium_patient_r4_endpoints.json', 'CERNER'],
    ['oracle-health/millennium_provider_r4_endpoints.json', 'CERNER'],
    ['oracle-health/soarian_patient_r4_endpoints.json', 'CERNER'],
    ['oracle-health-legacy-2023/millennium_patient_r4_endpoints.json', 'CERNER'],
    ['epic-legacy-2022/epic_endpoints_r4.json', 'EPIC'],
    ['epic-legacy-2022/epic_endpoints_r2.json', 'EPIC'],
  ];
  for (const [file, platformType] of bundles) files.push({ file, platformType, format: 'fhir-endpoint-bundle' });
  files.push({
    file: 'epic-legacy-2022/epic_endpoints.json', platformType: 'EPIC', format: 'rows',
    rows: () => readJson('epic-legacy-2022/epic_endpoints.json').Entries.map((e: Json) => row(e.FHIRPatientFacingURI, e.OrganizationName)),
  });
  const lantern = path.join(BRANDS_DIR, 'lantern-prod_resources');
  for (const name of readdirSync(lantern).filter((f) => f.endsWith('EndpointSources.json')).sort()) {
    const file = `lantern-prod_resources/${name}`;
    // LanternEndpointSources.json is empty upstream.
    if (readText(file).trim() === '') continue;
    const platformType = PLATFORM_BY_FILE.find(([pattern]) => pattern.test(name))?.[1] ?? 'OTHER';
    files.push({ file, platformType, format: 'lantern-endpoints' });
  }
  return files;
}

/** The real sources as the pipeline takes them, best first (priority = position), e.g. for publishCatalog. */
export function loadAllRealSources(): LoadedSource[] {
  return sourceFiles().map((source, i) => ({
    name: source.name ?? source.file,
    priority: i,
    platformType: source.platformType,
    parsed: source.format === 'rows' ? { rows: source.rows(), rejected: 0, rejections: [] } : parseSource(source.format, readText(source.file)),
  }));
}

export async function loadAllRealBrands(): Promise<{ brands: CatalogBrand[]; grouping: string }> {
  const brands = mergeSources(loadAllRealSources()).brands.map(({ logoUrl: _logoUrl, ...brand }) => ({ ...brand, logo: null }));
  return { brands, grouping: 'operator pipeline (parseSource + mergeSources)' };
}
