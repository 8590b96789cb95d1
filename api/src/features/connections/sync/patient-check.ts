// Whether a resource a health system returned is the connection's patient's (docs/connecting.md, "The right
// patient"): a server that answers a patient-scoped search with someone else's record must not have it stored as
// this patient's, whatever the reason (a bug, a mixed-up cache, an attacker). Each type is judged by the reference
// that puts it in the patient's compartment (FHIR R4 CompartmentDefinition "patient", the element US Core requires);
// a resource without it, or of a type this table does not know, is not the patient's. (The table: clinical's
// PATIENT_ELEMENT.)
import { PATIENT_ELEMENT } from '../../clinical/index.js';

/**
 * True when `resource` is `patient`'s: a Patient with that id, or a resource whose patient reference is
 * `Patient/<patient>` (relative, or absolute under `fhirBaseUrl`, with or without `_history`).
 */
export function isPatients(resource: unknown, patient: string, fhirBaseUrl: string): boolean {
  if (typeof resource !== 'object' || resource === null) return false;
  const { resourceType } = resource as { resourceType?: unknown };
  if (resourceType === 'Patient') return (resource as { id?: unknown }).id === patient;
  // A Provenance is the patient's when the patient is among what it is about.
  if (resourceType === 'Provenance')
    return ((resource as { target?: { reference?: unknown }[] }).target ?? []).some(
      (t) => typeof t?.reference === 'string' && patientIdOf(t.reference, fhirBaseUrl) === patient,
    );
  const element = typeof resourceType === 'string' ? PATIENT_ELEMENT[resourceType] : undefined;
  if (element === undefined) return false;
  const reference = (resource as Record<string, { reference?: unknown } | undefined>)[element]?.reference;
  return typeof reference === 'string' && patientIdOf(reference, fhirBaseUrl) === patient;
}

/** The Patient id a literal reference names, or undefined when it names no Patient on this server. */
function patientIdOf(reference: string, fhirBaseUrl: string): string | undefined {
  const base = fhirBaseUrl.replace(/\/+$/, '');
  const relative = reference.startsWith(`${base}/`) ? reference.slice(base.length + 1) : reference;
  const match = /^Patient\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/.exec(relative);
  return match?.[1];
}
