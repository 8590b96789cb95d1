// Lantern's "EndpointSources" lists (ONC's Lantern project, one file per certified developer's published
// list): {"Endpoints":[{"URL","OrganizationName","NPIID","OrganizationZipCode"}]}. Rows carry the name, the
// URL, the NPI when it is valid (the catalog finds brands by it) and the ZIP code when it is a known one (it
// places the brand). A ZIP code does not set the row's state: the merge checks it against the brand's.
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
    else {
      out.add(
        {
          name: entry.OrganizationName,
          fhirBaseUrl: entry.URL,
          npis: [entry.NPIID],
          postalCode: entry.OrganizationZipCode,
        },
        where,
      );
    }
  });
  return out.result();
}
