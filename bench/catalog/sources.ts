// The catalog the throughput benchmark serves: every fixture list (testkit/real-brands.ts) plus the
// HL7 example brands, whose inline logos give the logo redirect something to point at.
import { parseSource, type LoadedSource } from '../../operator/src/pipeline/index.js';
import { loadAllRealSources, readBrandFile } from '../../testkit/real-brands.js';

export function benchCatalogSources(): LoadedSource[] {
  const examples = [1, 2, 3, 4].map((n): LoadedSource => ({
    name: `hl7-example-${n}`,
    priority: 0,
    platformType: 'OTHER',
    parsed: parseSource('smart-brands-bundle', readBrandFile(`smart-app-launch-examples/Bundle-example${n}.json`)),
  }));
  return [...examples, ...loadAllRealSources()];
}
