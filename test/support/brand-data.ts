// Real vendor and directory files from shared/data/brands (see its SOURCES.md), read in place at test time:
// they are fixtures we may use, not files to copy into the repository.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { PlatformType } from '../../core/src/catalog/model.js';
import { repoRoot } from '../../core/src/infra/repo-root.js';
import type { LoadedSource, ParsedSource } from '../../operator/src/pipeline/types.js';

export const BRAND_DATA = path.join(repoRoot(), '..', 'shared', 'data', 'brands');

export function brandFile(relative: string): string {
  return readFileSync(path.join(BRAND_DATA, relative), 'utf8');
}

/** The Lantern EndpointSources lists that hold data (the upstream LanternEndpointSources.json is empty). */
export function lanternFiles(): string[] {
  const dir = path.join(BRAND_DATA, 'lantern-prod_resources');
  return readdirSync(dir)
    .filter((f) => f.endsWith('EndpointSources.json'))
    .filter((f) => readFileSync(path.join(dir, f), 'utf8').trim() !== '')
    .sort();
}

export const lanternFile = (name: string): string => brandFile(path.join('lantern-prod_resources', name));

export function loaded(name: string, parsed: ParsedSource, options: { priority?: number; platformType?: PlatformType } = {}): LoadedSource {
  return { name, parsed, priority: options.priority ?? 100, platformType: options.platformType ?? 'OTHER' };
}

/** RFC 4180 field quoting, for building CSV text in tests. */
export function csvField(value: string | undefined): string {
  if (value === undefined) return '';
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** Epic's User-access Brands rows and Oracle's patient rows as decoded by the upstream generator, as CSV text. */
export function epicBrands2026Csv(): { csv: string; rows: number } {
  const decoded = JSON.parse(brandFile('epic-brands-2026/smart-endpoints.decoded.json')) as {
    name: string; fhirBaseUrl: string; source: 'epic' | 'cerner'; city?: string; state?: string;
  }[];
  const lines = decoded.map((r) =>
    [r.name, r.fhirBaseUrl, r.source === 'epic' ? 'EPIC' : 'CERNER', r.city, r.state].map(csvField).join(','),
  );
  return { csv: ['name,fhirBaseUrl,platformType,city,state', ...lines].join('\r\n'), rows: decoded.length };
}
