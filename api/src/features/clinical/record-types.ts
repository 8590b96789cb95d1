// The record types Portico keeps and serves (docs/api.md, "The whole record"): the types of the FHIR patient
// compartment that US Core's patient access covers, and the types those resources point at, which a sync reads
// because a synced resource names them. One list: the store, the checks, the FHIR face, the grants and the sync all
// read it, so a type is added here and nowhere else.

/** Types in the patient's compartment: searched per patient on the health system, and on each connection's base. */
export const COMPARTMENT_TYPES = [
  'Patient',
  'AllergyIntolerance',
  'CarePlan',
  'CareTeam',
  'Condition',
  'Coverage',
  'Device',
  'DiagnosticReport',
  'DocumentReference',
  'Encounter',
  'ExplanationOfBenefit',
  'Goal',
  'Immunization',
  'MedicationDispense',
  'MedicationRequest',
  'Observation',
  'Procedure',
  'Provenance',
  'QuestionnaireResponse',
  'RelatedPerson',
  'ServiceRequest',
  'Specimen',
] as const;

/** Types read because a compartment resource points at them (Binary: attachments, kept in object storage). */
export const REFERENCED_TYPES = ['Medication', 'Practitioner', 'PractitionerRole', 'Organization', 'Location'] as const;

/** Every type a connection's record holds as a resource (Binary is served from object storage, not held here). */
export const RECORD_TYPES: readonly string[] = [...COMPARTMENT_TYPES, ...REFERENCED_TYPES];

const RECORD_TYPE_SET = new Set(RECORD_TYPES);
export const isRecordType = (type: unknown): type is string => typeof type === 'string' && RECORD_TYPE_SET.has(type);

/**
 * The element that puts each compartment type in a patient's compartment (FHIR R4 CompartmentDefinition "patient",
 * the element US Core requires): the patient check (§ "The right patient") judges a resource by it. Provenance
 * names its patient through what it is about; it is the patient's when its `patient` search finds one.
 */
export const PATIENT_ELEMENT: Readonly<Record<string, string>> = {
  AllergyIntolerance: 'patient',
  CarePlan: 'subject',
  CareTeam: 'subject',
  Condition: 'subject',
  Coverage: 'beneficiary',
  Device: 'patient',
  DiagnosticReport: 'subject',
  DocumentReference: 'subject',
  Encounter: 'subject',
  ExplanationOfBenefit: 'patient',
  Goal: 'subject',
  Immunization: 'patient',
  MedicationDispense: 'subject',
  MedicationRequest: 'subject',
  Observation: 'subject',
  Procedure: 'subject',
  QuestionnaireResponse: 'subject',
  RelatedPerson: 'patient',
  ServiceRequest: 'subject',
  Specimen: 'subject',
};

/**
 * Each type's clinical date: the search parameters whose first present value places a resource in time, for the
 * look-back window of the grants and for sorting. A type without one (and a resource without the value) has no
 * place in time: the look-back keeps it, and it sorts first.
 */
export const CLINICAL_DATE: Readonly<Record<string, readonly string[]>> = {
  Observation: ['date'], // effective[x]
  Condition: ['recorded-date', 'onset-date'],
  MedicationRequest: ['authoredon'],
  Encounter: ['date'], // period
  Procedure: ['date'], // performed[x]
  Immunization: ['date'], // occurrence[x]
  DiagnosticReport: ['date'], // effective[x]
  DocumentReference: ['date'],
  AllergyIntolerance: ['date'], // recordedDate
};
