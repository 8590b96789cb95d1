// The brand list fixtures (test/fixtures/brands, see its SOURCES.md) turned into catalog sources, and a helper
// that publishes them into a test API's catalog through the operator's own pipeline.
import type { PlatformType } from '#core/catalog/model.js';
import { parseSource, type LoadedSource, type SourceFormat } from '../operator/src/pipeline/index.js';
import { publishCatalog, type PublishReport } from '../operator/src/pipeline/publish.js';
import type { TestApi } from './api.js';
import { brandFile } from './brand-data.js';

export function realSource(
  name: string,
  format: SourceFormat,
  file: string,
  platformType: PlatformType,
  priority = 100,
): LoadedSource {
  return { name, priority, platformType, parsed: parseSource(format, brandFile(file)) };
}

/**
 * Oracle Health's patient endpoints and Epic's (legacy) R4 list, both synthetic stand-ins of the same shape, and
 * an HL7 example brand with a logo (a copy).
 */
export const realSources = (): LoadedSource[] => [
  realSource('oracle', 'fhir-endpoint-bundle', 'oracle-health/millennium_patient_r4_endpoints.json', 'CERNER', 10),
  realSource('epic', 'fhir-endpoint-bundle', 'epic-legacy-2022/epic_endpoints_r4.json', 'EPIC', 20),
  realSource('hl7-example', 'smart-brands-bundle', 'smart-app-launch-examples/Bundle-example1.json', 'OTHER', 5),
];

/** Publishes `sources` as the served catalog and waits until the API serves the new snapshot. */
export async function publishTo(
  api: TestApi,
  sources: LoadedSource[],
  minBrandRatioPercent = 0,
): Promise<PublishReport> {
  const report = await publishCatalog({
    ref: api.config.catalog,
    spec: { rollout: { retainSnapshots: 3, minBrandRatioPercent } },
    sources,
    store: api.services.snapshots,
    storage: api.services.storage,
  });
  await api.services.activeCatalog.refresh();
  return report;
}
