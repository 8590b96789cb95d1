import { expect } from 'chai';
import {
  MAX_ENTRIES,
  MAX_PROBLEMS,
  validateBundle,
  type EntryProblem,
} from '../../../../api/src/features/clinical/ingest/observations.js';
import {
  ACT_CODE,
  bloodPressure,
  CATEGORY_SYSTEM,
  confidentiality,
  glucose,
  hba1c,
  heartRate,
  hemoglobin,
  LOINC,
  manyObservations,
  observationBundle,
  sensitivity,
} from '../../../../testkit/observations.js';

type Resource = Record<string, unknown>;

function problemsOf(body: unknown): EntryProblem[] {
  const result = validateBundle(body);
  if (result.ok) return expect.fail('the bundle was accepted');
  return result.problems;
}

const without = (resource: Resource, element: string): Resource => {
  const copy = { ...resource };
  delete copy[element];
  return copy;
};

describe('clinical: Observation bundles', () => {
  it('accepts a realistic collection of vital signs and laboratory results', () => {
    const resources = [heartRate(), bloodPressure(), glucose(), hba1c(), hemoglobin()];
    const result = validateBundle(observationBundle(resources));
    if (!result.ok) return expect.fail(JSON.stringify(result.problems));
    expect(result.observations.map((o) => o.resourceId)).to.deep.equal(resources.map((r) => r.id));
    expect(result.observations[2]!.resource, 'the resource as given').to.equal(resources[2]);
  });

  it('accepts a batch bundle, and an empty one', () => {
    expect(validateBundle(observationBundle([glucose()], 'batch')).ok).to.equal(true);
    // An EHR's search answer as it came: its matches are read, an included Patient and its OperationOutcome passed over.
    const searchset = {
      resourceType: 'Bundle',
      type: 'searchset',
      total: 2,
      entry: [
        { fullUrl: 'https://ehr.example/Observation/a', resource: heartRate({ id: 'a' }), search: { mode: 'match' } },
        { resource: { resourceType: 'Patient', id: 'p' }, search: { mode: 'include' } },
        { resource: glucose({ id: 'b' }), search: { mode: 'match' } },
        {
          resource: { resourceType: 'OperationOutcome', issue: [{ severity: 'information', code: 'informational' }] },
          search: { mode: 'outcome' },
        },
      ],
    };
    const read = validateBundle(searchset);
    expect(read.ok && read.observations.map((o) => o.resourceId)).to.deep.equal(['a', 'b']);
    // Without effective[x]: accepted, with no date range (FHIR R4 makes it optional).
    const { effectiveDateTime: _date, ...undated } = heartRate({ id: 'undated' });
    const noDate = validateBundle(observationBundle([undated]));
    expect(noDate.ok && noDate.observations[0]!.date).to.equal(null);
    expect(validateBundle(observationBundle([]))).to.deep.equal({ ok: true, observations: [] });
  });

  it(`accepts ${MAX_ENTRIES} entries`, () => {
    const result = validateBundle(observationBundle(manyObservations(MAX_ENTRIES)));
    if (!result.ok) return expect.fail(JSON.stringify(result.problems.slice(0, 3)));
    expect(result.observations).to.have.length(MAX_ENTRIES);
    expect(new Set(result.observations.map((o) => o.resourceId)).size).to.equal(MAX_ENTRIES);
  });

  describe('refuses a bundle that is not one', () => {
    for (const body of [null, [], 'Bundle', 42]) {
      it(`${JSON.stringify(body)}`, () => {
        expect(problemsOf(body)).to.deep.equal([
          { index: -1, path: '', problem: 'must be a FHIR Bundle (a JSON object)' },
        ]);
      });
    }

    it('another resource type', () => {
      const body = { ...observationBundle([heartRate()]), resourceType: 'Parameters' };
      expect(problemsOf(body)).to.deep.equal([{ index: -1, path: 'resourceType', problem: 'must be "Bundle"' }]);
    });

    it('a bundle type other than collection, batch or searchset', () => {
      for (const type of ['transaction', 'history', undefined]) {
        expect(problemsOf({ ...observationBundle([heartRate()]), type })).to.deep.equal([
          { index: -1, path: 'type', problem: 'must be one of collection, batch, searchset' },
        ]);
      }
    });

    it('no entry, or an entry that is not an array', () => {
      expect(problemsOf(without(observationBundle([]), 'entry'))).to.deep.equal([
        { index: -1, path: 'entry', problem: 'is required' },
      ]);
      expect(problemsOf({ ...observationBundle([]), entry: { resource: heartRate() } })).to.deep.equal([
        { index: -1, path: 'entry', problem: 'must be an array' },
      ]);
    });

    it(`more than ${MAX_ENTRIES} entries, without reading them`, () => {
      const body = observationBundle(Array.from({ length: MAX_ENTRIES + 1 }, () => ({ resourceType: 'Patient' })));
      expect(problemsOf(body)).to.deep.equal([
        { index: -1, path: 'entry', problem: 'has 1001 entries; at most 1000 are accepted' },
      ]);
    });

    it('an entry without a resource, or one that is not an object', () => {
      const body = observationBundle([heartRate(), glucose()]);
      (body.entry as unknown[]).push({ fullUrl: 'urn:uuid:0f6cbc31-7f36-4e8e-9b5c-1a5f0f8a4b11' }, 'Observation/1');
      expect(problemsOf(body)).to.deep.equal([
        { index: 2, path: 'entry[2].resource', problem: 'is required' },
        { index: 3, path: 'entry[3]', problem: 'must be an object with a resource' },
      ]);
    });
  });

  describe('refuses an Observation that breaks a rule, naming the entry and the element', () => {
    const rules: Array<[string, Resource, string, RegExp]> = [
      ['another resource type', { ...heartRate(), resourceType: 'Patient' }, 'resourceType', /^must be "Observation"$/],
      ['no id (resources are upserted by it)', without(heartRate(), 'id'), 'id', /^is required/],
      ['an id with a character FHIR ids do not allow', heartRate({ id: 'obs_2024/03' }), 'id', /not a valid FHIR id/],
      ['an id of 65 characters', heartRate({ id: 'a'.repeat(65) }), 'id', /not a valid FHIR id/],
      ['no status', without(glucose(), 'status'), 'status', /^is required$/],
      [
        'a contained resource (the gateway could not filter it)',
        glucose({ contained: [{ resourceType: 'Observation', id: 'inner', status: 'final', code: { text: 'x' } }] }),
        'contained',
        /^is not accepted/,
      ],
      [
        'a status outside the value set',
        glucose({ status: 'done' }),
        'status',
        /^must be one of registered, preliminary, final, amended, corrected, cancelled, entered-in-error, unknown$/,
      ],
      ['no code', without(glucose(), 'code'), 'code', /^is required$/],
      [
        'a code with neither a coding code nor a text',
        glucose({ code: { coding: [{ system: LOINC, display: 'Glucose' }] } }),
        'code',
        /needs a coding with a code, or a text/,
      ],
      [
        'a code whose coding code has a trailing space',
        glucose({ code: { coding: [{ system: LOINC, code: '2339-0 ' }] } }),
        'code.coding[0].code',
        /not a valid FHIR code/,
      ],
      [
        'an effectiveDateTime without seconds',
        heartRate({ effectiveDateTime: '2024-03-05T08:30-05:00' }),
        'effectiveDateTime',
        /not a valid FHIR dateTime/,
      ],
      [
        'an effectiveDateTime with a time but no zone',
        heartRate({ effectiveDateTime: '2024-03-05T08:30:00' }),
        'effectiveDateTime',
        /not a valid FHIR dateTime/,
      ],
      [
        'an effectiveDateTime not on the calendar',
        heartRate({ effectiveDateTime: '2023-02-29' }),
        'effectiveDateTime',
        /valid calendar dates/,
      ],
      [
        'an effectivePeriod that ends before it starts',
        hemoglobin({ effectivePeriod: { start: '2024-03-02', end: '2024-03-01' } }),
        'effectivePeriod',
        /^start is after end$/,
      ],
      [
        'an effectivePeriod with neither start nor end',
        hemoglobin({ effectivePeriod: {} }),
        'effectivePeriod',
        /needs a start or an end/,
      ],
      [
        'an effectivePeriod end in US notation',
        hemoglobin({ effectivePeriod: { start: '2024-03-01', end: '03/02/2024' } }),
        'effectivePeriod.end',
        /not a valid FHIR dateTime/,
      ],
      [
        'an effectiveInstant of a date alone',
        glucose({ effectiveDateTime: undefined, effectiveInstant: '2024-03-04' }),
        'effectiveInstant',
        /not a valid FHIR instant/,
      ],
      [
        'an effectiveTiming event not on the calendar',
        heartRate({ effectiveDateTime: undefined, effectiveTiming: { event: ['2024-03-05', '2024-02-30'] } }),
        'effectiveTiming.event[1]',
        /valid calendar dates/,
      ],
      [
        'two effective[x]',
        heartRate({ effectiveInstant: '2024-03-05T08:30:00Z' }),
        'effectiveInstant',
        /second effective\[x\] \(effectiveDateTime is given too\)/,
      ],
      [
        'a Quantity value as text',
        heartRate({ valueQuantity: { value: '72', unit: '/min' } }),
        'valueQuantity.value',
        /^must be a number$/,
      ],
      [
        'a Quantity with an element it does not have',
        heartRate({ valueQuantity: { value: 72, units: '/min' } }),
        'valueQuantity.units',
        /not an element FHIR R4 defines here/,
      ],
      [
        'a valueCodeableConcept that is a string',
        glucose({ valueQuantity: undefined, valueCodeableConcept: 'positive' }),
        'valueCodeableConcept',
        /^must be an object$/,
      ],
      [
        'an empty valueString',
        glucose({ valueQuantity: undefined, valueString: '' }),
        'valueString',
        /not a valid FHIR string/,
      ],
      [
        'a valueBoolean as text',
        glucose({ valueQuantity: undefined, valueBoolean: 'true' }),
        'valueBoolean',
        /^must be a boolean$/,
      ],
      [
        'a valueInteger with a fraction',
        heartRate({ valueQuantity: undefined, valueInteger: 72.5 }),
        'valueInteger',
        /^must be an integer$/,
      ],
      [
        'a valueRange bound as text',
        glucose({ valueQuantity: undefined, valueRange: { low: { value: 70 }, high: { value: 'ninety-nine' } } }),
        'valueRange.high.value',
        /^must be a number$/,
      ],
      [
        'a valueRatio numerator that is a number',
        glucose({ valueQuantity: undefined, valueRatio: { numerator: 1, denominator: { value: 128 } } }),
        'valueRatio.numerator',
        /^must be an object$/,
      ],
      [
        'a valueSampledData without an origin',
        heartRate({ valueQuantity: undefined, valueSampledData: { period: 10, dimensions: 1, data: '72 73 71' } }),
        'valueSampledData.origin',
        /^is required$/,
      ],
      [
        'a valueTime without seconds',
        glucose({ valueQuantity: undefined, valueTime: '07:05' }),
        'valueTime',
        /not a valid FHIR time/,
      ],
      [
        'a valueDateTime in US notation',
        glucose({ valueQuantity: undefined, valueDateTime: '03/04/2024' }),
        'valueDateTime',
        /not a valid FHIR dateTime/,
      ],
      [
        'a valuePeriod start in US notation',
        glucose({ valueQuantity: undefined, valuePeriod: { start: '03/04/2024' } }),
        'valuePeriod.start',
        /not a valid FHIR dateTime/,
      ],
      [
        'a value type Observation does not have in R4',
        glucose({ valueQuantity: undefined, valueDecimal: 95 }),
        'valueDecimal',
        /not an element FHIR R4 defines here/,
      ],
      [
        'two value[x]',
        glucose({ valueString: '95 mg/dL' }),
        'valueString',
        /second value\[x\] \(valueQuantity is given too\)/,
      ],
      [
        'two value[x] in a component',
        bloodPressure({
          component: [{ code: { text: 'Systolic' }, valueQuantity: { value: 128 }, valueString: '128' }],
        }),
        'component[0].valueString',
        /second value\[x\]/,
      ],
      [
        'a category that is not a list',
        heartRate({ category: { coding: [{ system: CATEGORY_SYSTEM, code: 'vital-signs' }] } }),
        'category',
        /^must be an array$/,
      ],
      [
        'a category system with a space',
        heartRate({ category: [{ coding: [{ system: 'observation category', code: 'vital-signs' }] }] }),
        'category[0].coding[0].system',
        /not a valid FHIR uri/,
      ],
      [
        'a security label that is not a coding',
        hemoglobin({ meta: { security: ['R'] } }),
        'meta.security[0]',
        /^must be an object$/,
      ],
      [
        'two confidentiality labels',
        hemoglobin({ meta: { security: [confidentiality('R'), sensitivity('HIV'), confidentiality('N')] } }),
        'meta.security[2]',
        /second confidentiality label \(R is given too\); at most one/,
      ],
      [
        'a confidentiality code outside U L M N R V',
        hemoglobin({ meta: { security: [confidentiality('restricted')] } }),
        'meta.security[0].code',
        /v3-Confidentiality code: U, L, M, N, R, V/,
      ],
      [
        'a sensitivity code that is not a v3-ActCode',
        hemoglobin({ meta: { security: [sensitivity('hiv')] } }),
        'meta.security[0].code',
        /v3-ActCode/,
      ],
      [
        'a sensitivity label without a code',
        hemoglobin({ meta: { security: [{ system: ACT_CODE, display: 'HIV/AIDS information sensitivity' }] } }),
        'meta.security[0].code',
        /v3-ActCode/,
      ],
    ];
    for (const [what, resource, path, problem] of rules) {
      it(what, () => {
        const problems = problemsOf(observationBundle([heartRate(), resource, glucose()]));
        const found = problems.find((p) => p.path === `entry[1].resource.${path}`);
        expect(found, JSON.stringify(problems)).to.include({ index: 1 });
        expect(found!.problem).to.match(problem);
        expect(
          problems.filter((p) => p.index !== 1),
          'problems of the valid entries',
        ).to.deep.equal([]);
      });
    }
  });

  it('lists every problem of every entry, in entry order', () => {
    const problems = problemsOf(
      observationBundle([glucose({ status: 'done' }), heartRate(), without(hba1c({ status: 'final?' }), 'id')]),
    );
    expect(problems.map((p) => p.path)).to.deep.equal([
      'entry[0].resource.status',
      'entry[2].resource.status',
      'entry[2].resource.id',
    ]);
    expect(problems.map((p) => p.index)).to.deep.equal([0, 2, 2]);
  });

  it('refuses a second Observation with the same id, on the later entry', () => {
    const first = glucose({ id: 'glucose-2024-03-04' });
    const problems = problemsOf(
      observationBundle([first, heartRate(), glucose({ id: 'glucose-2024-03-04', status: 'amended' })]),
    );
    expect(problems).to.deep.equal([
      {
        index: 2,
        path: 'entry[2].resource.id',
        problem: 'repeats the id of entry[0]; each Observation.id may appear once',
      },
    ]);
  });

  it(`lists at most ${MAX_PROBLEMS} problems and says how many more there were`, () => {
    const problems = problemsOf(
      observationBundle(manyObservations(MAX_ENTRIES).map((r) => ({ ...r, status: 'done' }))),
    );
    expect(problems).to.have.length(MAX_PROBLEMS);
    expect(problems.slice(0, -1).map((p) => p.index)).to.deep.equal(
      Array.from({ length: MAX_PROBLEMS - 1 }, (_, i) => i),
    );
    expect(problems.at(-1)).to.deep.equal({
      index: -1,
      path: 'entry',
      problem: `${MAX_ENTRIES - (MAX_PROBLEMS - 1)} more problems not listed`,
    });
  });

  it('lists exactly the problems when there are no more than the cap', () => {
    const resources = manyObservations(MAX_PROBLEMS).map((r) => ({ ...r, status: 'done' }));
    const problems = problemsOf(observationBundle(resources));
    expect(problems).to.have.length(MAX_PROBLEMS);
    expect(problems.every((p) => p.path.endsWith('.status'))).to.equal(true);
  });
});
