// The CapabilityStatement of every connection's FHIR base (docs/api.md, "The whole record"): each record type with
// its interactions and search parameters (the definitions' own list: search/definitions.ts), Patient's
// `$everything`, and Binary's read. The same bytes whatever the connection: it tells nothing about one.
import { RECORD_TYPES } from '../record-types.js';
import { searchParams } from '../search/definitions.js';

/** What every type's search takes besides its own parameters. */
const COMMON = [
  { name: '_id', type: 'token' },
  { name: '_lastUpdated', type: 'date' },
  { name: '_count', type: 'number' },
  { name: '_sort', type: 'string' },
  { name: '_total', type: 'string' },
  { name: '_summary', type: 'string' },
];

let statement: string | undefined;

/** The statement's JSON text (built once, on first use). */
export function capabilityStatement(): string {
  statement ??= JSON.stringify({
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: '2026-12-07',
    kind: 'instance',
    software: { name: 'Portico' },
    implementation: { description: "A patient's connection as a FHIR server (read-only)" },
    fhirVersion: '4.0.1',
    format: ['json', 'application/fhir+json'],
    rest: [
      {
        mode: 'server',
        security: {
          description: 'Authorization: Bearer with an app secret key (ak_) holding the scope observation:read.',
        },
        resource: [
          ...RECORD_TYPES.map((type) => ({
            type,
            interaction: [{ code: 'read' }, { code: 'search-type' }],
            searchInclude: type === 'MedicationRequest' ? ['MedicationRequest:medication'] : [],
            searchRevInclude: ['Provenance:target'],
            searchParam: [
              ...COMMON,
              ...[...searchParams(type).values()]
                .map((param) => ({ name: param.name, type: param.kind }))
                .sort((a, b) => (a.name < b.name ? -1 : 1)),
            ],
            ...(type === 'Patient' && {
              operation: [
                { name: 'everything', definition: 'http://hl7.org/fhir/OperationDefinition/Patient-everything' },
              ],
            }),
          })),
          { type: 'Binary', interaction: [{ code: 'read' }] },
        ],
      },
    ],
  });
  return statement;
}
