// Every brand the benchmark can build from the public lists in /work/shared/data/brands, grouped by FHIR
// base URL. When the operator's import pipeline (operator/src/pipeline: parseSource + mergeSources) is
// compiled next to this file, it does the parsing of the formats it knows and all the deduplication, so
// the benchmark indexes what the operator would publish. Otherwise a simple local grouping stands in
// (https, lower-case host, no trailing slash; first name seen = name, later names = aliases).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CatalogBrand, PlatformType } from '../../api/src/catalog/model.js';
import { words } from '../../api/src/catalog/search/fold.js';
import { stateCode } from '../../api/src/catalog/search/states.js';
import { repoRoot } from '../../api/src/infra/repo-root.js';

export const BRANDS_DIR = path.join(repoRoot(), '..', 'shared', 'data', 'brands');

interface Row {
  name: string;
  fhirBaseUrl: string;
  aliases?: string[];
  city?: string;
  state?: string;
}

interface SourceFile {
  file: string;
  platformType: PlatformType;
  /** A format the pipeline parses, with the local parser used when the pipeline is absent. */
  format: 'lantern-endpoints' | 'fhir-endpoint-bundle' | 'rows';
  rows: () => Row[];
}

// The source files are untyped JSON, read once; shapes are checked by use.
type Json = any;

const readText = (file: string) => readFileSync(path.join(BRANDS_DIR, file), 'utf8');
const readJson = (file: string): Json => {
  const text = readText(file);
  return text.trim() === '' ? null : JSON.parse(text);
};
const optional = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value : undefined);
const row = (fhirBaseUrl: unknown, name: unknown, city?: unknown, state?: unknown): Row => ({
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

// FHIR bundles, locally: Organization → Endpoint/<id> (Oracle today) or an Endpoint's contained Organization.
function bundleRows(file: string): Row[] {
  const resources: Json[] = readJson(file).entry.map((e: Json) => e.resource);
  const address = new Map(resources.filter((r) => r.resourceType === 'Endpoint').map((r) => [`Endpoint/${r.id}`, r.address]));
  const linked = resources
    .filter((r) => r.resourceType === 'Organization')
    .flatMap((org) => (org.endpoint ?? []).map((ref: Json) => row(address.get(ref.reference), org.name, org.address?.[0]?.city, org.address?.[0]?.state)));
  const contained = resources
    .filter((r) => r.resourceType === 'Endpoint' && r.contained?.[0])
    .map((e) => row(e.address, e.contained[0].name ?? e.name, e.contained[0].address?.[0]?.city, e.contained[0].address?.[0]?.state));
  return [...linked, ...contained];
}

/** Best sources first: the first name seen for a FHIR system names the brand. */
function sourceFiles(): SourceFile[] {
  const files: SourceFile[] = [
    {
      file: 'epic-brands-2026/DERIVED-epic-grouped-by-fhirBaseUrl.json', platformType: 'EPIC', format: 'rows',
      rows: () => readJson('epic-brands-2026/DERIVED-epic-grouped-by-fhirBaseUrl.json').map((g: Json) => ({ ...row(g.fhirBaseUrl, g.name, undefined, g.states[0]), aliases: g.aliases })),
    },
    {
      file: 'epic-brands-2026/smart-endpoints.decoded.json', platformType: 'CERNER', format: 'rows',
      rows: () => readJson('epic-brands-2026/smart-endpoints.decoded.json').filter((r: Json) => r.source === 'cerner').map((r: Json) => row(r.fhirBaseUrl, r.name, r.city, r.state)),
    },
  ];
  const bundles: [string, PlatformType][] = [
    ['oracle-health/millennium_patient_r4_endpoints.json', 'CERNER'],
    ['oracle-health/millennium_provider_r4_endpoints.json', 'CERNER'],
    ['oracle-health/soarian_patient_r4_endpoints.json', 'CERNER'],
    ['oracle-health-legacy-2023/millennium_patient_r4_endpoints.json', 'CERNER'],
    ['epic-legacy-2022/epic_endpoints_r4.json', 'EPIC'],
    ['epic-legacy-2022/epic_endpoints_r2.json', 'EPIC'],
  ];
  for (const [file, platformType] of bundles) files.push({ file, platformType, format: 'fhir-endpoint-bundle', rows: () => bundleRows(file) });
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
    files.push({ file, platformType, format: 'lantern-endpoints', rows: () => readJson(file).Endpoints.map((e: Json) => row(e.URL, e.OrganizationName)) });
  }
  return files;
}

/** The subset of operator/src/pipeline this benchmark calls, loaded at run time (see the header). */
interface Pipeline {
  parseSource(format: string, text: string): { rows: unknown[]; rejected: number; rejections: string[] };
  mergeSources(sources: unknown[]): { brands: (Omit<CatalogBrand, 'logo'> & { logoUrl?: string })[] };
}

async function loadPipeline(): Promise<Pipeline | undefined> {
  const url = new URL('../../operator/src/pipeline/index.js', import.meta.url);
  if (!existsSync(fileURLToPath(url))) return undefined;
  const module = (await import(url.href)) as Partial<Pipeline>;
  return typeof module.mergeSources === 'function' && typeof module.parseSource === 'function' ? (module as Pipeline) : undefined;
}

export async function loadAllRealBrands(): Promise<{ brands: CatalogBrand[]; grouping: string }> {
  const files = sourceFiles();
  const pipeline = await loadPipeline();
  if (pipeline) {
    const sources = files.map((source, i) => ({
      name: source.file,
      priority: i,
      platformType: source.platformType,
      parsed: source.format === 'rows' ? { rows: source.rows(), rejected: 0, rejections: [] } : pipeline.parseSource(source.format, readText(source.file)),
    }));
    const brands = pipeline.mergeSources(sources).brands.map(({ logoUrl: _logoUrl, ...brand }) => ({ ...brand, logo: null }));
    return { brands, grouping: 'operator pipeline (parseSource + mergeSources)' };
  }
  return { brands: groupLocally(files), grouping: 'local (pipeline not built)' };
}

function normaliseUrl(raw: string): string | undefined {
  try {
    const url = new URL(/^[a-z]+:\/\//i.test(raw.trim()) ? raw.trim() : `https://${raw.trim()}`);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
    return `https://${url.host.toLowerCase().replace(/:443$/, '')}${url.pathname.replace(/\/+$/, '')}${url.search}`;
  } catch {
    return undefined;
  }
}

function groupLocally(files: SourceFile[]): CatalogBrand[] {
  const brands = new Map<string, CatalogBrand & { seen: Set<string> }>();
  for (const source of files) {
    for (const { fhirBaseUrl, name: rawName, aliases = [], city, state } of source.rows()) {
      const url = normaliseUrl(fhirBaseUrl);
      const name = rawName.trim();
      if (!url || !name) continue;
      let brand = brands.get(url);
      if (!brand) {
        const id = 'b_' + createHash('sha256').update(url).digest('base64url').slice(0, 22);
        brand = { id, name, aliases: [], platformType: source.platformType, fhirBaseUrl: url, city: null, state: null, portalUrl: null, logo: null, seen: new Set([words(name).join(' ')]) };
        brands.set(url, brand);
      }
      for (const other of brand.name === name ? aliases : [name, ...aliases]) {
        const key = words(other).join(' ');
        if (brand.seen.has(key)) continue;
        brand.seen.add(key);
        brand.aliases.push(other);
      }
      brand.city ??= city?.trim() || null;
      brand.state ??= (state && stateCode(state)) || null;
    }
  }
  return [...brands.values()].map(({ seen: _seen, ...brand }) => brand);
}
