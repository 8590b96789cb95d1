// Stored observations for the search tests: realistic FHIR R4 Observations of two connections, as ingest
// stores them (api/src/features/clinical/records/document.ts), with the cases the search must tell apart: every date
// precision, periods (one straddling a new year, one ongoing), a resource without a date, a tie of five
// results of one blood draw, security labels, codings without a system and a non-LOINC code.
import { BEGINNING, ONGOING, dateRange } from '../../../../../api/src/features/clinical/dates.js';
import type { CodingIndex, ObservationDocument } from '../../../../../api/src/features/clinical/records/document.js';
import type { Grants } from '../../../../../api/src/features/clinical/gateway/query.js';

export const CONNECTION_A = '0b9e3c1e-6f4a-4d7e-9a51-2f8c0d6b7a11';
export const CONNECTION_B = '7d2f5a90-3c1b-4e8f-8b6d-9e0a4c2f1b22';
export const ACCOUNT = 'c4a1e7f2-58d3-4b0e-a6c9-1d2e3f4a5b6c';
export const NOW = new Date('2026-02-01T00:00:00.000Z');
export const AS_OF = new Date('2026-01-31T12:00:00.000Z');
const INGESTED = new Date('2026-01-31T00:00:00.000Z');

export const LOINC = 'http://loinc.org';
export const CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category';
export const LOCAL = 'http://acme.example/vitals';

/** Every grant: what the single-clause tests start from. */
export const ALL: Grants = {
  loincCodes: ['*'],
  confidentiality: ['U', 'L', 'M', 'N', 'R', 'V'],
  sensitivity: ['HIV', 'PSY'],
  lookbackDays: null,
};

interface Coding {
  system?: string;
  code: string;
  display?: string;
}

const KINDS = {
  heartRate: {
    coding: { system: LOINC, code: '8867-4', display: 'Heart rate' },
    category: 'vital-signs',
    value: 72,
    unit: '/min',
  },
  bloodPressure: {
    coding: { system: LOINC, code: '85354-9', display: 'Blood pressure panel with all children optional' },
    category: 'vital-signs',
    value: null,
    unit: '',
  },
  glucose: {
    coding: { system: LOINC, code: '2339-0', display: 'Glucose [Mass/volume] in Blood' },
    category: 'laboratory',
    value: 95,
    unit: 'mg/dL',
  },
  hba1c: {
    coding: { system: LOINC, code: '4548-4', display: 'Hemoglobin A1c/Hemoglobin.total in Blood' },
    category: 'laboratory',
    value: 5.6,
    unit: '%',
  },
  hemoglobin: {
    coding: { system: LOINC, code: '718-7', display: 'Hemoglobin [Mass/volume] in Blood' },
    category: 'laboratory',
    value: 13.8,
    unit: 'g/dL',
  },
} as const;

export interface ObservationSpec {
  id: string;
  kind: keyof typeof KINDS;
  /** effectiveDateTime, or effectivePeriod (no end: ongoing); absent: no effective date. */
  effective?: string | { start: string; end?: string };
  connectionId?: string;
  confidentiality?: string;
  sensitivity?: string[];
  /** Replace the kind's code codings / category codings. */
  codings?: Coding[];
  categories?: Coding[];
  firstIngestedAt?: Date;
}

export function buildObservation(spec: ObservationSpec): ObservationDocument {
  const kind = KINDS[spec.kind];
  const connectionId = spec.connectionId ?? CONNECTION_A;
  const codings: Coding[] = spec.codings ?? [kind.coding];
  const categories: Coding[] = spec.categories ?? [{ system: CATEGORY, code: kind.category }];
  const date = rangeOf(spec.effective);
  const security = [
    ...(spec.confidentiality
      ? [{ system: 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality', code: spec.confidentiality }]
      : []),
    ...(spec.sensitivity ?? []).map((code) => ({ system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code })),
  ];
  const effective =
    spec.effective === undefined
      ? {}
      : typeof spec.effective === 'string'
        ? { effectiveDateTime: spec.effective }
        : { effectivePeriod: spec.effective };
  return {
    _id: `${connectionId}/${spec.id}`,
    connectionId,
    accountId: ACCOUNT,
    resourceId: spec.id,
    code: indexOf(codings),
    category: indexOf(categories),
    date,
    sortDate: date?.start ?? BEGINNING,
    confidentiality: spec.confidentiality ?? 'N',
    sensitivity: spec.sensitivity ?? [],
    firstIngestedAt: spec.firstIngestedAt ?? INGESTED,
    resource: {
      resourceType: 'Observation',
      id: spec.id,
      ...(security.length > 0 ? { meta: { security } } : {}),
      status: 'final',
      category: [{ coding: categories }],
      code: { coding: codings, text: kind.coding.display },
      subject: { reference: 'Patient/example' },
      ...effective,
      ...(kind.value === null
        ? {}
        : {
            valueQuantity: { value: kind.value, unit: kind.unit, system: 'http://unitsofmeasure.org', code: kind.unit },
          }),
    },
  };
}

function rangeOf(effective: ObservationSpec['effective']): { start: Date; end: Date } | null {
  if (effective === undefined) return null;
  if (typeof effective === 'string') return dateRange(effective);
  return { start: dateRange(effective.start)!.start, end: effective.end ? dateRange(effective.end)!.end : ONGOING };
}

function indexOf(codings: Coding[]): CodingIndex {
  return {
    tokens: codings.map((c) => `${c.system ?? ''}|${c.code}`),
    codes: codings.map((c) => c.code),
    systems: codings.flatMap((c) => (c.system ? [c.system] : [])),
  };
}

const BLOOD_DRAW = '2023-05-10T08:30:00Z';

/** Connection A: o01–o31 visible at AS_OF (o31 ingested exactly then), o32 ingested just after. */
export const SPECS_A: ObservationSpec[] = [
  { id: 'o01', kind: 'heartRate', effective: '2021-03-04T09:15:00Z' },
  { id: 'o02', kind: 'heartRate', effective: '2022-06-15T14:00:00.250Z' },
  { id: 'o03', kind: 'heartRate', effective: '2023-01-20' },
  { id: 'o04', kind: 'bloodPressure', effective: BLOOD_DRAW, confidentiality: 'R' },
  { id: 'o05', kind: 'glucose', effective: BLOOD_DRAW },
  { id: 'o06', kind: 'hba1c', effective: BLOOD_DRAW },
  { id: 'o07', kind: 'hemoglobin', effective: BLOOD_DRAW },
  { id: 'o08', kind: 'glucose', effective: { start: '2023-07-01T00:00:00Z', end: '2023-07-01T23:59:59Z' } },
  { id: 'o09', kind: 'heartRate', effective: { start: '2024-01-01T00:00:00Z' } },
  { id: 'o10', kind: 'hba1c', effective: '2024-02' },
  { id: 'o11', kind: 'hemoglobin', effective: '2024' },
  { id: 'o12', kind: 'glucose' },
  { id: 'o13', kind: 'hemoglobin', effective: '2022-11-03T10:00:00Z', confidentiality: 'R', sensitivity: ['HIV'] },
  { id: 'o14', kind: 'heartRate', effective: '2022-09-12T16:20:00+02:00', confidentiality: 'R', sensitivity: ['PSY'] },
  { id: 'o15', kind: 'glucose', effective: '2024-07-19T06:45:00Z', confidentiality: 'R', sensitivity: ['HIV', 'PSY'] },
  { id: 'o16', kind: 'bloodPressure', effective: '2024-03-08T11:00:00Z', confidentiality: 'V' },
  { id: 'o17', kind: 'heartRate', effective: '2025-04-02T10:10:00Z', confidentiality: 'L' },
  {
    id: 'o18',
    kind: 'heartRate',
    effective: '2024-05-05T05:05:05Z',
    codings: [{ system: LOCAL, code: 'HR', display: 'Pulse' }],
  },
  { id: 'o19', kind: 'glucose', effective: '2021-08-30T07:00:00Z', codings: [KINDS.glucose.coding, { code: 'GLU' }] },
  { id: 'o20', kind: 'hemoglobin', effective: '2021-11-11', categories: [{ code: 'laboratory' }] },
  { id: 'o21', kind: 'heartRate', effective: '2019-12-31T23:30:00-05:00' },
  { id: 'o22', kind: 'hemoglobin', effective: '2020-06-01' },
  { id: 'o23', kind: 'hba1c', effective: { start: '2020-01-15', end: '2020-03-15' } },
  { id: 'o24', kind: 'heartRate', effective: '2025-08-01T12:00:00Z' },
  { id: 'o25', kind: 'bloodPressure', effective: '2025-12-31T23:59:59Z' },
  { id: 'o26', kind: 'glucose', effective: '2026-01-05T07:00:00Z' },
  { id: 'o27', kind: 'hemoglobin', effective: { start: '2025-12-20', end: '2026-01-10' } },
  { id: 'o28', kind: 'heartRate', effective: { start: '2022-12-20T08:00:00Z', end: '2023-01-05T18:00:00Z' } },
  { id: 'o29', kind: 'hba1c', effective: '2019-05-14' },
  { id: 'o30', kind: 'glucose', effective: '2018' },
  {
    id: 'o31',
    kind: 'hemoglobin',
    effective: BLOOD_DRAW,
    confidentiality: 'R',
    sensitivity: ['HIV'],
    firstIngestedAt: AS_OF,
  },
  { id: 'o32', kind: 'heartRate', effective: '2025-06-30T22:00:00Z', firstIngestedAt: new Date(AS_OF.getTime() + 1) },
];

/** Connection B: the same kinds of data, never in connection A's results. */
export const SPECS_B: ObservationSpec[] = [
  { id: 'b01', kind: 'heartRate', effective: BLOOD_DRAW },
  { id: 'b02', kind: 'glucose', effective: '2024-02' },
  { id: 'b03', kind: 'hemoglobin' },
  { id: 'b04', kind: 'hba1c', effective: '2025-12-31T23:59:59Z' },
  { id: 'b05', kind: 'bloodPressure', effective: { start: '2024-01-01' } },
  { id: 'b06', kind: 'heartRate', effective: '2026-01-20T09:00:00Z' },
  { id: 'b07', kind: 'glucose', effective: '2021-08-30T07:00:00Z', sensitivity: ['HIV'] },
  { id: 'b08', kind: 'hemoglobin', effective: '2022-06-15T14:00:00.250Z' },
].map((spec) => ({ ...spec, connectionId: CONNECTION_B }) as ObservationSpec);

export const FIXTURES: ObservationDocument[] = [...SPECS_A, ...SPECS_B].map(buildObservation);
