// Lantern's "EndpointSources" lists (ONC's Lantern project, one file per certified developer's published
// list): {"Endpoints":[{"URL","OrganizationName","NPIID","OrganizationZipCode"}]}. A zip code is not a state
// and NPI is not part of a catalog brand, so rows carry only a name and a URL.
import type { ParsedSource } from '../types.js';
import { RowCollector, isRecord, parseJson } from './collector.js';

const FORMAT = 'lantern-endpoints';

export function parseLanternEndpoints(text: string): ParsedSource {
  const document = parseJson(text, FORMAT);
  if (!isRecord(document) || !Array.isArray(document.Endpoints)) {
    throw new Error(`${FORMAT}: expected an object with an "Endpoints" array`);
  }
  const out = new RowCollector();
  document.Endpoints.forEach((entry: unknown, i: number) => {
    const where = `Endpoints[${i}]`;
    if (!isRecord(entry)) out.reject(`${where}: not an object`);
    else out.add({ name: entry.OrganizationName, fhirBaseUrl: entry.URL }, where);
  });
  return out.result();
}
