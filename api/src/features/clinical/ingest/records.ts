// The checks every record passes before it is stored (docs/api.md, "The whole record"), whatever its type and
// however it came (a sync, or `POST /connections/{id}/resources`): one of the record types Portico keeps, HL7's R4
// schema for its type (fhir-schema.ts), an id, at most 1 MiB, valid security labels, and the patient check: a
// resource of the patient's compartment names the connection's patient by its compartment reference. Observations
// keep their own stricter checks (observations.ts). Pure, like observations.ts.
import { securityLabels } from '../security-labels.js';
import { isRecordType, PATIENT_ELEMENT, RECORD_TYPES } from '../record-types.js';
import { clinicalDate, referenceKey, searchValues } from '../search/values.js';
import { schemaProblems, type ResourceProblem } from './fhir-schema.js';
import { readObservation, validateBundle, type BundleResult, type ReadResource } from './observations.js';

/** The largest resource kept (its JSON text). */
export const MAX_RECORD_BYTES = 1024 * 1024;

const NO_CODES = { tokens: [], codes: [], systems: [] };

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The patient a connection's records belong to: the health system's id of the patient who signed in, or, for a
 * connection not made by signing in, none (then a compartment resource must name a Patient, any one).
 */
export type ConnectionPatient = string | undefined;

/** A bundle of records of any type, checked whole (observations.ts, validateBundle). */
export function validateRecordBundle(body: unknown, patient: ConnectionPatient): BundleResult {
  return validateBundle(body, (resource) => readRecord(resource, patient));
}

/**
 * A resource's problems, or the record to store. A sync leaves the patient check out (`checkPatient` false): it
 * makes its own, which tells a foreign patient's record apart from an invalid one (connections/sync/patient-check.ts).
 */
export function readRecord(resource: unknown, patient: ConnectionPatient, checkPatient = true): ReadResource {
  if (resource === undefined) return { problems: [{ path: '', problem: 'is required' }] };
  if (!isObject(resource)) return { problems: [{ path: '', problem: 'must be a FHIR resource (a JSON object)' }] };
  const type = resource.resourceType;
  if (!isRecordType(type))
    return {
      problems: [
        {
          path: 'resourceType',
          problem: `must be a record type Portico keeps (${RECORD_TYPES.join(', ')})`,
        },
      ],
    };
  const found = type === 'Observation' ? readObservation(resource) : readOther(type, resource);
  if (found.problems.length > 0) return found;
  const problems = [...sizeProblems(resource), ...(checkPatient ? patientProblems(type, resource, patient) : [])];
  return problems.length > 0 ? { problems } : found;
}

function readOther(type: string, resource: Json): ReadResource {
  const problems: ResourceProblem[] = schemaProblems(type, resource);
  const add = (path: string, problem: string) => problems.push({ path, problem });
  if (resource.id === undefined) add('id', `is required: records are stored by their id`);
  const labels = securityLabels(isObject(resource.meta) ? resource.meta.security : undefined, add);
  if (problems.length > 0) return { problems: firstPerPath(problems) };
  const search = searchValues(resource);
  const date = clinicalDate(type, search);
  return {
    problems,
    observation: {
      resourceType: type,
      resourceId: resource.id as string,
      resource,
      code: NO_CODES,
      category: NO_CODES,
      date: date && { start: new Date(date.s), end: new Date(date.e) },
      confidentiality: labels.confidentiality,
      sensitivity: labels.sensitivity,
      search,
    },
  };
}

function sizeProblems(resource: Json): ResourceProblem[] {
  const bytes = Buffer.byteLength(JSON.stringify(resource));
  return bytes > MAX_RECORD_BYTES
    ? [{ path: '', problem: `is ${bytes} bytes; a record is at most ${MAX_RECORD_BYTES} bytes` }]
    : [];
}

/**
 * The patient check: a Patient must be the connection's patient; a compartment resource must name a Patient by its
 * compartment element (`subject`, `patient`, `beneficiary`…), the connection's when it has one. Referenced types
 * (Medication, Practitioner…) and Provenance belong to no patient.
 */
export function patientProblems(type: string, resource: Json, patient: ConnectionPatient): ResourceProblem[] {
  if (type === 'Patient')
    return patient === undefined || resource.id === patient
      ? []
      : [{ path: 'id', problem: "is not the connection's patient" }];
  const element = PATIENT_ELEMENT[type];
  if (element === undefined) return [];
  const reference = isObject(resource[element]) ? resource[element].reference : undefined;
  const named = typeof reference === 'string' ? referenceKey(reference) : undefined;
  if (!named?.startsWith('Patient/'))
    return [{ path: `${element}.reference`, problem: 'must name the patient (Patient/<id>): records are a patient’s' }];
  if (patient !== undefined && named !== `Patient/${patient}`)
    return [{ path: `${element}.reference`, problem: "is not the connection's patient" }];
  return [];
}

/** The schema and the rules can both object to one value; the first word stands. */
function firstPerPath(problems: ResourceProblem[]): ResourceProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => !seen.has(p.path) && seen.add(p.path));
}
