// Records of the US Core types Synthea never writes (Coverage, Goal, MedicationDispense, QuestionnaireResponse,
// RelatedPerson, ServiceRequest, Specimen), written by hand after US Core 6.1's examples, so that the whole-record tests
// store, search and serve every record type and not only those of the Synthea fixtures. Two of each, told apart by
// their status, code and dates.
type Resource = Record<string, unknown> & { resourceType: string; id: string };

const SNOMED = 'http://snomed.info/sct';

/** The records of the patient `patient` (its id), valid FHIR R4 with US Core's must-support elements. */
export function usCoreExtraRecords(patient: string): Resource[] {
  const subject = { reference: `Patient/${patient}` };
  return [
    ...[
      ['cov-1', 'active', 'HIP', '2024-01-01'],
      ['cov-2', 'cancelled', 'DENTPRG', '2019-01-01'],
    ].map(([id, status, code, start]) => ({
      resourceType: 'Coverage',
      id: id!,
      status,
      type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code }] },
      subscriberId: `member-${id}`,
      beneficiary: subject,
      relationship: {
        coding: [{ system: 'http://terminology.hl7.org/CodeSystem/subscriber-relationship', code: 'self' }],
      },
      period: { start },
      payor: [{ display: 'Acme Health Plan' }],
    })),
    ...[
      ['goal-1', 'active', 'Walk 30 minutes a day', '2026-06-30'],
      ['goal-2', 'completed', 'Lower HbA1c below 7 %', '2023-12-31'],
    ].map(([id, lifecycleStatus, text, due]) => ({
      resourceType: 'Goal',
      id: id!,
      lifecycleStatus,
      description: { text },
      subject,
      target: [{ dueDate: due }],
      startDate: '2022-01-15',
    })),
    ...[
      ['dispense-1', 'completed', 'FF', '2025-03-02T10:00:00Z'],
      ['dispense-2', 'in-progress', 'RF', '2025-09-10T10:00:00Z'],
    ].map(([id, status, type, handedOver]) => ({
      resourceType: 'MedicationDispense',
      id: id!,
      status,
      type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: type }] },
      medicationCodeableConcept: {
        coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '860975', display: 'metformin' }],
      },
      subject,
      whenHandedOver: handedOver,
    })),
    ...[
      ['qr-1', 'completed', '2025-02-01T09:00:00Z', 'http://loinc.org/q/44249-1'],
      ['qr-2', 'in-progress', '2021-05-01T09:00:00Z', 'http://loinc.org/q/55757-9'],
    ].map(([id, status, authored, questionnaire]) => ({
      resourceType: 'QuestionnaireResponse',
      id: id!,
      questionnaire,
      status,
      subject,
      authored,
      item: [{ linkId: '1', text: 'Little interest or pleasure in doing things', answer: [{ valueInteger: 1 }] }],
    })),
    ...[
      ['rp-1', 'Martha', 'Rivera', 'MTH'],
      ['rp-2', 'Daniel', 'Okafor', 'BRO'],
    ].map(([id, given, family, code]) => ({
      resourceType: 'RelatedPerson',
      id: id!,
      active: true,
      patient: subject,
      relationship: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-RoleCode', code }] }],
      name: [{ given: [given], family }],
    })),
    ...[
      ['sr-1', 'active', '108252007', 'Laboratory procedure', '2025-04-01T08:00:00Z', 'laboratory'],
      ['sr-2', 'completed', '73761001', 'Colonoscopy', '2020-07-01T08:00:00Z', 'procedure'],
    ].map(([id, status, code, display, authored, category]) => ({
      resourceType: 'ServiceRequest',
      id: id!,
      status,
      intent: 'order',
      category: [
        {
          coding: [
            {
              system: SNOMED,
              code: category === 'laboratory' ? '108252007' : '387713003',
            },
          ],
        },
      ],
      code: { coding: [{ system: SNOMED, code, display }] },
      subject,
      authoredOn: authored,
    })),
    ...[
      ['spec-1', 'available', '119297000', '2025-04-02T08:30:00Z'],
      ['spec-2', 'unavailable', '122575003', '2020-07-01T09:00:00Z'],
    ].map(([id, status, type, collected]) => ({
      resourceType: 'Specimen',
      id: id!,
      status,
      type: { coding: [{ system: SNOMED, code: type }] },
      subject,
      collection: { collectedDateTime: collected },
      note: [{ text: `Specimen ${id}` }],
    })),
  ];
}

/** US Core 6.1's SHALL (and some SHOULD) searches of those types, as the whole-record tests write them. */
export const US_CORE_EXTRA_SEARCHES = [
  'Coverage?patient={patient}',
  'Goal?patient={patient}',
  'Goal?patient={patient}&lifecycle-status=active',
  'Goal?patient={patient}&target-date=ge2025-01-01',
  'MedicationDispense?patient={patient}',
  'MedicationDispense?patient={patient}&status=completed',
  `MedicationDispense?patient={patient}&type=http://terminology.hl7.org/CodeSystem/v3-ActCode|RF`,
  'QuestionnaireResponse?patient={patient}',
  'QuestionnaireResponse?patient={patient}&status=completed&authored=ge2024',
  'QuestionnaireResponse?patient={patient}&questionnaire=http://loinc.org/q/44249-1',
  'QuestionnaireResponse?_id=qr-2',
  'RelatedPerson?patient={patient}',
  'RelatedPerson?patient={patient}&name=rive',
  'RelatedPerson?_id=rp-2',
  'ServiceRequest?patient={patient}',
  `ServiceRequest?patient={patient}&category=${SNOMED}|108252007`,
  `ServiceRequest?patient={patient}&code=${SNOMED}|73761001`,
  'ServiceRequest?patient={patient}&status=active&authored=ge2025-01-01',
  'Specimen?patient={patient}',
  'Specimen?_id=spec-1',
  `Specimen?patient={patient}&type=${SNOMED}|122575003`,
];
