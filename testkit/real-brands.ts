// Every brand the benchmarks can build from the brand list fixtures (test/fixtures/brands, see its SOURCES.md: the
// Lantern lists are copies but for its four copies of the Oracle Health and Epic lists, which like those lists are
// synthetic stand-ins of the same shape): each file in a
// format the operator reads (vendor FHIR endpoint bundles, Lantern lists), in the order of trust below, parsed by
// the operator's own parsers (parseSource) and deduplicated by its merge (mergeSources), so a benchmark indexes or
// publishes exactly what the operator would. Two files in other shapes are left out rather than given a
// benchmark-only parser: epic-brands-2026's decoded table (derived data); Epic's 2022 EndpointsJson is not among the
// fixtures at all.
import type { CatalogBrand, PlatformType } from '#core/catalog/model.js';
import { mergeSources, parseSource, type LoadedSource, type SourceFormat } from '../operator/src/pipeline/index.js';
import { BRAND_DATA, brandFile, lanternFiles } from './brand-data.js';

/** The fixtures' folder (files in it are gzip-compressed: read them with readBrandFile). */
export const BRANDS_DIR = BRAND_DATA;

/** A fixture's text, named as upstream (`smart-app-launch-examples/Bundle-example1.json`). */
export const readBrandFile = brandFile;

interface SourceFile {
  file: string;
  format: SourceFormat;
  platformType: PlatformType;
}

// Lantern's lists are per developer; the file name says which EHR a row belongs to.
export const PLATFORM_BY_FILE: [RegExp, PlatformType][] = [
  [/^Epic/, 'EPIC'],
  [/^Cerner/, 'CERNER'],
  [/^(athena|AthenaClinicals)/i, 'ATHENAHEALTH'],
  [/MEDITECH/, 'MEDITECH'],
  [/^NextGen/, 'NEXTGEN'],
  [/^Veradigm/, 'VERADIGM'],
  [/^Altera/, 'ALTERA'],
  [/^eClinicalWorks/, 'ECLINICALWORKS'],
  [/^Practice_Fusion/, 'PRACTICE_FUSION'],
  [/^Greenway/, 'GREENWAY'],
  [/^Modernizing_Medicine/, 'MODMED'],
  [/^MEDHOST/, 'MEDHOST'],
  [/^Netsmart/, 'NETSMART'],
];

/** The EHR a Lantern list's rows belong to, from its file name. */
export const lanternPlatform = (name: string): PlatformType =>
  PLATFORM_BY_FILE.find(([pattern]) => pattern.test(name))?.[1] ?? 'OTHER';

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
  const files: SourceFile[] = bundles.map(([file, platformType]) => ({
    file,
    platformType,
    format: 'fhir-endpoint-bundle',
  }));
  // Those with data: LanternEndpointSources.json is empty upstream.
  for (const name of lanternFiles()) {
    const file = `lantern-prod_resources/${name}`;
    const platformType = lanternPlatform(name);
    files.push({ file, platformType, format: 'lantern-endpoints' });
  }
  return files;
}

/** The fixture sources as the pipeline takes them, best first (priority = position), e.g. for publishCatalog. */
export function loadAllRealSources(): LoadedSource[] {
  return sourceFiles().map((source, i) => ({
    name: source.file,
    priority: i,
    platformType: source.platformType,
    parsed: parseSource(source.format, readBrandFile(source.file)),
  }));
}

export async function loadAllRealBrands(): Promise<{ brands: CatalogBrand[]; grouping: string }> {
  const brands = mergeSources(loadAllRealSources()).brands.map(({ logoUrl: _logoUrl, ...brand }) => ({
    ...brand,
    logo: null,
  }));
  return { brands, grouping: 'operator pipeline (parseSource + mergeSources)' };
}
