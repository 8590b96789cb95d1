// An access-log entry as a FHIR R4 AuditEvent, after IHE's Basic Audit Log Patterns (BALP): PatientRead for a read
// and a Binary, PatientQuery for a search and `$everything` (docs/api.md, "The access log"). The pattern is a tag, not
// a claimed profile: PatientQuery's profile requires the query itself, whose values Portico does not keep, and
// PatientRead's the resource read, where Portico names the connection and counts. Who: the app (the client
// agent, requestor) and its account (the information's recipient); Portico is the server agent and the observer.
// What: the patient (the app user) and the connection, with the type read and how many resources the answer held:
// counts and identifiers, never a resource's content, nor the search's parameters (their values can be clinical).
// Outcome: 0 when answered, 4 when refused, with the refusal's code.
import type { AccessEntry } from './store.js';

export const PORTICO_SYSTEM = 'https://portico.dev/fhir/sid';
/** Which of BALP's patterns an event follows, tagged rather than claimed as a profile (see below). */
const PATTERN = 'https://portico.dev/fhir/CodeSystem/balp-pattern';
const DCM = 'http://dicom.nema.org/resources/ontology/DCM';
const ENTITY_TYPE = 'http://terminology.hl7.org/CodeSystem/audit-entity-type';
const OBJECT_ROLE = 'http://terminology.hl7.org/CodeSystem/object-role';

const INTERACTION = {
  search: { code: 'search-type', display: 'search-type', action: 'E', pattern: 'PatientQuery' },
  everything: { code: 'operation', display: 'operation', action: 'E', pattern: 'PatientQuery' },
  read: { code: 'read', display: 'read', action: 'R', pattern: 'PatientRead' },
  binary: { code: 'read', display: 'read', action: 'R', pattern: 'PatientRead' },
} as const;

/** The names an AuditEvent shows beside identifiers, when known. */
export interface AuditNames {
  app?: string;
  brand?: string;
}

export function presentAuditEvent(entry: AccessEntry, names: AuditNames = {}): Record<string, unknown> {
  const interaction = INTERACTION[entry.interaction];
  const what = entry.interaction === 'everything' ? '$everything' : entry.resourceType;
  return {
    resourceType: 'AuditEvent',
    id: entry.id,
    meta: { tag: [{ system: PATTERN, code: interaction.pattern, display: `IHE BALP ${interaction.pattern}` }] },
    type: {
      system: 'http://terminology.hl7.org/CodeSystem/audit-event-type',
      code: 'rest',
      display: 'Restful Operation',
    },
    subtype: [
      { system: 'http://hl7.org/fhir/restful-interaction', code: interaction.code, display: interaction.display },
    ],
    action: interaction.action,
    recorded: entry.createdAt.toISOString(),
    outcome: entry.denied === undefined ? '0' : '4',
    ...(entry.denied !== undefined && { outcomeDesc: entry.denied }),
    agent: [
      {
        type: { coding: [{ system: DCM, code: '110153', display: 'Source Role ID' }] },
        who: { identifier: { system: `${PORTICO_SYSTEM}/app`, value: entry.appId }, ...display(names.app) },
        requestor: true,
      },
      {
        type: {
          coding: [
            {
              system: 'http://terminology.hl7.org/CodeSystem/v3-ParticipationType',
              code: 'IRCP',
              display: 'information recipient',
            },
          ],
        },
        who: { identifier: { system: `${PORTICO_SYSTEM}/account`, value: entry.accountId } },
        requestor: false,
      },
      {
        type: { coding: [{ system: DCM, code: '110152', display: 'Destination Role ID' }] },
        who: { display: 'Portico' },
        requestor: false,
      },
    ],
    source: {
      observer: { display: 'Portico' },
      type: [
        {
          system: 'http://terminology.hl7.org/CodeSystem/security-source-type',
          code: '4',
          display: 'Application Server',
        },
      ],
    },
    entity: [
      {
        what: { identifier: { system: `${PORTICO_SYSTEM}/app-user`, value: entry.appUserId } },
        type: { system: ENTITY_TYPE, code: '1', display: 'Person' },
        role: { system: OBJECT_ROLE, code: '1', display: 'Patient' },
      },
      {
        what: {
          identifier: { system: `${PORTICO_SYSTEM}/connection`, value: entry.connectionId },
          ...display(names.brand),
        },
        type: { system: ENTITY_TYPE, code: '2', display: 'System Object' },
        role: { system: OBJECT_ROLE, code: '4', display: 'Domain Resource' },
        ...(what !== null && { name: what }),
        detail: [
          ...(entry.resourceType === null ? [] : [{ type: 'resourceType', valueString: entry.resourceType }]),
          { type: 'count', valueString: String(entry.count) },
          { type: 'brandId', valueString: entry.brandId },
          { type: 'requestId', valueString: entry.requestId },
        ],
      },
    ],
  };
}

const display = (name: string | undefined) => (name === undefined ? {} : { display: name });
