// Every brand the benchmarks can build from the public lists in ../shared/data/brands: each file in a format
// the operator reads (vendor FHIR endpoint bundles, Lantern lists), in the order of trust below, parsed by the
// operator's own parsers (parseSource) and deduplicated by its merge (mergeSources), so a benchmark indexes
// or publishes exactly what the operator would. Two files in other shapes are left out rather than given a
// benchmark-only parser: epic-brands-2026's decoded table (derived data) and Epic's 2022 EndpointsJson.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { CatalogBrand, PlatformType } from '../../core/src/catalog/model.js';
import { repoRoot } from '../../core/src/infra/repo-root.js';
import { mergeSources, parseSource, type LoadedSource, type SourceFormat } from '../../operator/src/pipeline/index.js';

export const BRANDS_DIR = path.join(repoRoot(), '..', 'shared', 'data', 'brands');

interface SourceFile {
  file: string;
  format: SourceFormat;
  platformType: PlatformType;
}

const readText = (file: string) => readFileSync(path.join(BRANDS_DIR, file), 'utf8');

// Lantern's lists are per developer; the file name says which EHR a row belongs to.
const PLATFORM_BY_FILE: [RegExp, PlatformType][] = [
  [/^Epic/, 'EPIC'], [/^Cerner/, 'CERNER'], [/^(athena|AthenaClinicals)/i, 'ATHENAHEALTH'], [/MEDITECH/, 'MEDITECH'],
  [/^NextGen/, 'NEXTGEN'], [/^Veradigm/, 'VERADIGM'], [/^Altera/, 'ALTERA'], [/^eClinicalWorks/, 'ECLINICALWORKS'],
  [/^Practice_Fusion/, 'PRACTICE_FUSION'], [/^Greenway/, 'GREENWAY'], [/^Modernizing_Medicine/, 'MODMED'],
  [/^MEDHOST/, 'MEDHOST'], [/^Netsmart/, 'NETSMART'],
];

/** Best sources first: the best-ranked source that lists a FHIR system names its brand. */
function sourceFiles(): SourceFile[] {
  const bundles: [string, PlatformType][] = [
    ['oracle-health/millennium_patient_r4_endpoints.json', 'CERNER'],
    ['oracle-health/millennium_provider_r4_endpoints.json', 'CERNER'],
    ['oracle-health/soarian_patient_r4_endpoints.json', 'CERNER'],
    ['oracle-health-legacy-2023/millennium_patient_r4_endpoints.json', 'CERNER'],
    ['epic-legacy-2022/epic_endpoints_r4.json', 'EPIC'],
    ['epic-legacy-2022/epic_endpoints_r2.json', 'EPIC'],
  ];
  const files: SourceFile[] = bundles.map(([file, platformType]) => ({ file, platformType, format: 'fhir-endpoint-bundle' }));
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
  return sourceFiles().map((source, i) => ({ name: source.file, priority: i, platformType: source.platformType, parsed: parseSource(source.format, readText(source.file)) }));
}

export async function loadAllRealBrands(): Promise<{ brands: CatalogBrand[]; grouping: string }> {
  const brands = mergeSources(loadAllRealSources()).brands.map(({ logoUrl: _logoUrl, ...brand }) => ({ ...brand, logo: null }));
  return { brands, grouping: 'operator pipeline (parseSource + mergeSources)' };
}
