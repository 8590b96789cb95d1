// The catalog pipeline's pure stages: parse a source, normalise, deduplicate, assign ids.
import type { LoadedSource, ParsedSource, SourceFormat } from './types.js';
import { parseCsv } from './sources/csv.js';
import { parseFhirEndpointBundle } from './sources/fhir-endpoint-bundle.js';
import { parseLanternEndpoints } from './sources/lantern-endpoints.js';
import { parseSmartBrandsBundle } from './sources/smart-brands-bundle.js';

export * from './types.js';
export { parseCsv, parseFhirEndpointBundle, parseLanternEndpoints, parseSmartBrandsBundle };
export { MAX_REJECTION_REASONS } from './sources/collector.js';
export { cleanName, inferPlatformType, nameKey, normaliseFhirBaseUrl } from './normalise.js';
export { brandIdFor } from './ids.js';
export {
  MAX_ALIASES,
  mergeSources,
  MULTI_TENANT_THRESHOLD,
  PLATFORM_DISPLAY_NAMES,
  type MergeResult,
  type MergedBrand,
  type SourceSummary,
} from './dedupe.js';

const PARSERS: Record<SourceFormat, (text: string) => ParsedSource> = {
  'smart-brands-bundle': parseSmartBrandsBundle,
  'fhir-endpoint-bundle': parseFhirEndpointBundle,
  'lantern-endpoints': parseLanternEndpoints,
  csv: parseCsv,
};

/** A source as the merge takes it: its text read by `read`, parsed, labelled; errors name the source. */
export async function loadSource(
  source: { name: string; format: SourceFormat; priority: number; platformType: LoadedSource['platformType'] },
  read: () => Promise<string>,
): Promise<LoadedSource> {
  try {
    return {
      name: source.name,
      priority: source.priority,
      platformType: source.platformType,
      parsed: parseSource(source.format, await read()),
    };
  } catch (error) {
    throw new Error(`source "${source.name}": ${(error as Error).message}`);
  }
}

/** Parses a source's text in the given format; throws only when the text as a whole is not in that format. */
export function parseSource(format: SourceFormat, text: string): ParsedSource {
  const parser = PARSERS[format];
  if (parser === undefined) throw new Error(`unknown source format ${JSON.stringify(format)}`);
  return parser(text);
}
