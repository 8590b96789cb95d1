// FHIR R4 Observations as an EHR sends them: real LOINC codes, HL7 observation categories, UCUM units and
// meta.security labels. Each builder makes a unique, valid resource; tests override only what they are about.
import { randomUUID } from 'node:crypto';

export const LOINC = 'http://loinc.org';
export const UCUM = 'http://unitsofmeasure.org';
export const CATEGORY_SYSTEM = 'http://terminology.hl7.org/CodeSystem/observation-category';
export const CONFIDENTIALITY = 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality';
export const ACT_CODE = 'http://terminology.hl7.org/CodeSystem/v3-ActCode';

type Resource = Record<string, unknown>;

const category = (code: 'vital-signs' | 'laboratory') => [
  { coding: [{ system: CATEGORY_SYSTEM, code, display: code === 'vital-signs' ? 'Vital Signs' : 'Laboratory' }] },
];
const loinc = (code: string, display: string) => ({ coding: [{ system: LOINC, code, display }], text: display });
const quantity = (value: number, unit: string, code = unit) => ({ value, unit, system: UCUM, code });

export const confidentiality = (code: string) => ({ system: CONFIDENTIALITY, code });
export const sensitivity = (code: string) => ({ system: ACT_CODE, code });

/** A unique FHIR id (letters, digits and "-"), as an EHR's export would carry. */
export const observationId = (prefix = 'obs'): string => `${prefix}-${randomUUID()}`;

function observation(base: Resource, overrides: Resource): Resource {
  return {
    resourceType: 'Observation',
    id: observationId(),
    status: 'final',
    subject: { reference: 'Patient/example', display: 'Amy V. Shaw' },
    ...base,
    ...overrides,
  };
}

export function heartRate(overrides: Resource = {}): Resource {
  return observation(
    {
      category: category('vital-signs'),
      code: loinc('8867-4', 'Heart rate'),
      effectiveDateTime: '2024-03-05T08:30:00-05:00',
      valueQuantity: quantity(72, '/min'),
    },
    overrides,
  );
}

export function bloodPressure(overrides: Resource = {}): Resource {
  return observation(
    {
      category: category('vital-signs'),
      code: loinc('85354-9', 'Blood pressure panel with all children optional'),
      effectiveDateTime: '2024-03-05T08:30:00-05:00',
      component: [
        { code: loinc('8480-6', 'Systolic blood pressure'), valueQuantity: quantity(128, 'mmHg', 'mm[Hg]') },
        { code: loinc('8462-4', 'Diastolic blood pressure'), valueQuantity: quantity(82, 'mmHg', 'mm[Hg]') },
      ],
    },
    overrides,
  );
}

export function glucose(overrides: Resource = {}): Resource {
  return observation(
    {
      category: category('laboratory'),
      code: loinc('2339-0', 'Glucose [Mass/volume] in Blood'),
      effectiveDateTime: '2024-03-04T07:05:00Z',
      issued: '2024-03-04T09:12:44.150Z',
      valueQuantity: quantity(95, 'mg/dL'),
      referenceRange: [{ low: quantity(70, 'mg/dL'), high: quantity(99, 'mg/dL') }],
    },
    overrides,
  );
}

export function hba1c(overrides: Resource = {}): Resource {
  return observation(
    {
      category: category('laboratory'),
      code: loinc('4548-4', 'Hemoglobin A1c/Hemoglobin.total in Blood'),
      effectiveDateTime: '2024-02',
      valueQuantity: quantity(6.1, '%'),
      interpretation: [
        {
          coding: [
            {
              system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation',
              code: 'H',
              display: 'High',
            },
          ],
        },
      ],
    },
    overrides,
  );
}

export function hemoglobin(overrides: Resource = {}): Resource {
  return observation(
    {
      category: category('laboratory'),
      code: loinc('718-7', 'Hemoglobin [Mass/volume] in Blood'),
      effectivePeriod: { start: '2024-03-01T10:00:00+01:00', end: '2024-03-01T10:20:00+01:00' },
      valueQuantity: quantity(13.2, 'g/dL'),
      meta: { security: [confidentiality('R'), sensitivity('HIV')] },
    },
    overrides,
  );
}

/** A FHIR Bundle of type collection (or batch) around the resources, as an EHR export sends them. */
export function observationBundle(resources: Resource[], type = 'collection'): Resource {
  return {
    resourceType: 'Bundle',
    type,
    entry: resources.map((resource) => ({ fullUrl: `urn:uuid:${randomUUID()}`, resource })),
  };
}

/** `count` observations cycling through the five kinds above, each with its own id. */
export function manyObservations(count: number): Resource[] {
  const kinds = [heartRate, bloodPressure, glucose, hba1c, hemoglobin];
  return Array.from({ length: count }, (_, i) => kinds[i % kinds.length]!());
}
