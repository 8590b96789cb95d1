// The sandbox's people and their records: demo defaults, and synthetic FHIR R4 Observations built on demand from
// (brand, patient, index) alone, so the same request always answers the same resources and a patient with 10,000
// observations costs a few numbers per observation, not 10,000 stored documents.
import type { SandboxBrand, SandboxPatient } from './types.js';

export const DEMO_CLIENT_ID = 'portico-demo';

export const DEMO_BRANDS: SandboxBrand[] = [
  { key: 'sandbox-health', name: 'Portico Sandbox Health', v2: true },
  { key: 'sandbox-clinic', name: 'Portico Sandbox Clinic', v2: false },
];

export const DEMO_PATIENTS: SandboxPatient[] = [
  {
    id: 'ada',
    username: 'ada',
    password: 'sandbox',
    name: 'Ada Lovelace',
    birthDate: '1985-12-10',
    observations: 120,
  },
  {
    id: 'grace',
    username: 'grace',
    password: 'sandbox',
    name: 'Grace Hopper',
    birthDate: '1976-12-09',
    observations: 40,
  },
];

/**
 * The whole synthetic records (Synthea fixtures: fhir/record-store.ts) the demo (`npm start`, sandbox/src/main.ts)
 * gives its patients in place of generated observations; tests that start a sandbox keep the generated ones.
 */
export const DEMO_RECORDS: Readonly<Record<string, string>> = {
  ada: 'Brittany443_Cristi782_Funk324_6e60a21c-348e-b1fe-ba7d-e1f693d900d6.json.gz',
  grace: 'Wesley533_Zemlak964_7a698864-b352-3681-84f7-ebad8e29d39f.json.gz',
};

/**
 * When the seeded observations were last updated: fixed, so their meta.lastUpdated never depends on when the
 * sandbox started; one minute apart, in index order.
 */
export const SEEDED_AT = Date.parse('2024-01-01T00:00:00Z');
export const SEED_STEP_MS = 60_000;

const LOINC = 'http://loinc.org';
const UCUM = 'http://unitsofmeasure.org';
const CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category';

type Resource = Record<string, unknown>;

interface Kind {
  category: 'vital-signs' | 'laboratory';
  code: string;
  display: string;
  /** The value for a 0..1 random draw. */
  value(draw: number): Resource;
}

const quantity = (value: number, unit: string, code = unit): Resource => ({
  valueQuantity: { value, unit, system: UCUM, code },
});
const between = (draw: number, low: number, high: number, decimals = 0): number =>
  Number((low + draw * (high - low)).toFixed(decimals));

// Real LOINC codes with UCUM units, as a patient portal's vital signs and labs carry them.
const KINDS: Kind[] = [
  {
    category: 'vital-signs',
    code: '8867-4',
    display: 'Heart rate',
    value: (d) => quantity(between(d, 55, 100), '/min'),
  },
  {
    category: 'vital-signs',
    code: '29463-7',
    display: 'Body weight',
    value: (d) => quantity(between(d, 55, 90, 1), 'kg'),
  },
  {
    category: 'laboratory',
    code: '2339-0',
    display: 'Glucose [Mass/volume] in Blood',
    value: (d) => quantity(between(d, 70, 140), 'mg/dL'),
  },
  {
    category: 'vital-signs',
    code: '85354-9',
    display: 'Blood pressure panel with all children optional',
    value: (d) => ({
      component: [
        component('8480-6', 'Systolic blood pressure', between(d, 105, 140)),
        component('8462-4', 'Diastolic blood pressure', between(1 - d, 65, 90)),
      ],
    }),
  },
  {
    category: 'vital-signs',
    code: '8310-5',
    display: 'Body temperature',
    value: (d) => quantity(between(d, 36.1, 37.6, 1), 'Cel'),
  },
  {
    category: 'vital-signs',
    code: '9279-1',
    display: 'Respiratory rate',
    value: (d) => quantity(between(d, 12, 20), '/min'),
  },
  {
    category: 'vital-signs',
    code: '59408-5',
    display: 'Oxygen saturation in Arterial blood by Pulse oximetry',
    value: (d) => quantity(between(d, 94, 100), '%'),
  },
  {
    category: 'laboratory',
    code: '4548-4',
    display: 'Hemoglobin A1c/Hemoglobin.total in Blood',
    value: (d) => quantity(between(d, 4.8, 6.4, 1), '%'),
  },
];

function component(code: string, display: string, value: number): Resource {
  return {
    code: { coding: [{ system: LOINC, code, display }], text: display },
    valueQuantity: { value, unit: 'mm[Hg]', system: UCUM, code: 'mm[Hg]' },
  };
}

/** A FHIR id, unique per brand (the patient's id is in it) and in index order when compared as strings. */
export function observationId(patientId: string, index: number): string {
  return `${patientId}-obs-${String(index).padStart(7, '0')}`;
}

/** A stable 0..1 draw for (brand, patient, index): FNV-1a, then a splitmix step to spread the bits. */
function draw(seed: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) hash = Math.imul(hash ^ seed.charCodeAt(i), 0x01000193);
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return ((hash ^ (hash >>> 16)) >>> 0) / 2 ** 32;
}

export interface ObservationVersion {
  index: number;
  /** When it was first recorded (ms): its clinical content is dated from this, so a new version keeps it. */
  created: number;
  lastUpdated: number;
  version: number;
}

export interface BuildOptions {
  brandKey: string;
  patientId: string;
  /** Drops `code`, which FHIR requires: an observation Portico must skip and count. */
  invalid: boolean;
  /** The patient `subject` names, when it is not `patientId`: an observation that is not the patient's. */
  subjectId?: string;
  /** Added to the meta.lastUpdated shown, not to the one the store filters and orders by. */
  lastUpdatedOffsetMs?: number;
}

export function buildObservation(entry: ObservationVersion, options: BuildOptions): Resource {
  const { brandKey, patientId } = options;
  const kind = KINDS[entry.index % KINDS.length]!;
  const chance = draw(`${brandKey}|${patientId}|${entry.index}`);
  // Taken an hour to a day before it was first recorded, as results reach a chart after the visit.
  const effective = new Date(entry.created - (1 + Math.floor(chance * 23)) * 3_600_000);
  const resource: Resource = {
    resourceType: 'Observation',
    id: observationId(patientId, entry.index),
    meta: {
      versionId: String(entry.version),
      lastUpdated: new Date(entry.lastUpdated + (options.lastUpdatedOffsetMs ?? 0)).toISOString(),
    },
    status: 'final',
    category: [
      {
        coding: [
          {
            system: CATEGORY,
            code: kind.category,
            display: kind.category === 'laboratory' ? 'Laboratory' : 'Vital Signs',
          },
        ],
      },
    ],
    code: { coding: [{ system: LOINC, code: kind.code, display: kind.display }], text: kind.display },
    subject: { reference: `Patient/${options.subjectId ?? patientId}` },
    effectiveDateTime: effective.toISOString(),
    issued: new Date(entry.created).toISOString(),
    ...kind.value(chance),
  };
  if (options.invalid) delete resource.code;
  return resource;
}
