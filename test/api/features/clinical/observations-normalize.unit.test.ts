import { expect } from 'chai';
import {
  validateBundle,
  type NormalizedObservation,
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
  observationBundle,
  sensitivity,
} from '../../../../testkit/observations.js';

type Resource = Record<string, unknown>;

function normalize(resource: Resource): NormalizedObservation {
  const result = validateBundle(observationBundle([resource]));
  if (!result.ok) return expect.fail(JSON.stringify(result.problems));
  return result.observations[0]!;
}

/** The normalized date range as ISO strings, or null. */
const dateOf = (resource: Resource): [string, string] | null => {
  const { date } = normalize(resource);
  return date && [date.start.toISOString(), date.end.toISOString()];
};

const SNOMED = 'http://snomed.info/sct';

describe('clinical: normalized Observations', () => {
  describe('code and category tokens', () => {
    it('tokenizes Observation.code only, not the codes of its components', () => {
      expect(normalize(bloodPressure()).code).to.deep.equal({
        tokens: [`${LOINC}|85354-9`],
        codes: ['85354-9'],
        systems: [LOINC],
      });
    });

    it('keeps every coding of the code, sorted and without repeats; a coding without a system as |code', () => {
      const code = {
        coding: [
          { system: LOINC, code: '8867-4', display: 'Heart rate' },
          { system: SNOMED, code: '364075005', display: 'Heart rate (observable entity)' },
          { code: 'HR' },
          { system: LOINC, code: '8867-4' },
        ],
      };
      expect(normalize(heartRate({ code })).code).to.deep.equal({
        tokens: ['http://loinc.org|8867-4', 'http://snomed.info/sct|364075005', '|HR'],
        codes: ['364075005', '8867-4', 'HR'],
        systems: [LOINC, SNOMED],
      });
    });

    it('accepts a code given as text alone, which gives no tokens', () => {
      expect(normalize(glucose({ code: { text: 'Fasting glucose' } })).code).to.deep.equal({
        tokens: [],
        codes: [],
        systems: [],
      });
    });

    it('counts a coding with a system but no code among the systems only', () => {
      const code = {
        coding: [
          { system: LOINC, code: '2339-0' },
          { system: SNOMED, display: 'Glucose measurement' },
        ],
      };
      expect(normalize(glucose({ code })).code).to.deep.equal({
        tokens: [`${LOINC}|2339-0`],
        codes: ['2339-0'],
        systems: [LOINC, SNOMED],
      });
    });

    it('gathers the codings of every category', () => {
      const category = [
        { coding: [{ system: CATEGORY_SYSTEM, code: 'laboratory' }] },
        { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0074', code: 'CH', display: 'Chemistry' }] },
        { coding: [{ system: CATEGORY_SYSTEM, code: 'laboratory' }] },
      ];
      expect(normalize(hba1c({ category })).category).to.deep.equal({
        tokens: [`${CATEGORY_SYSTEM}|laboratory`, 'http://terminology.hl7.org/CodeSystem/v2-0074|CH'],
        codes: ['CH', 'laboratory'],
        systems: [CATEGORY_SYSTEM, 'http://terminology.hl7.org/CodeSystem/v2-0074'],
      });
    });

    it('has empty category tokens without a category', () => {
      expect(normalize(heartRate({ category: undefined })).category).to.deep.equal({
        tokens: [],
        codes: [],
        systems: [],
      });
    });
  });

  describe('the effective date range', () => {
    it('reads an effectiveDateTime to the second as that second, in UTC', () => {
      expect(dateOf(heartRate({ effectiveDateTime: '2024-03-05T08:30:00-05:00' }))).to.deep.equal([
        '2024-03-05T13:30:00.000Z',
        '2024-03-05T13:30:00.999Z',
      ]);
    });

    it('reads a partial effectiveDateTime as its whole month', () => {
      expect(dateOf(hba1c({ effectiveDateTime: '2024-02' }))).to.deep.equal([
        '2024-02-01T00:00:00.000Z',
        '2024-02-29T23:59:59.999Z',
      ]);
    });

    it('reads an effectiveInstant as that instant', () => {
      const resource = glucose({ effectiveDateTime: undefined, effectiveInstant: '2024-03-04T07:05:12.250Z' });
      expect(dateOf(resource)).to.deep.equal(['2024-03-04T07:05:12.250Z', '2024-03-04T07:05:12.250Z']);
    });

    it('reads an effectivePeriod from the start of its start to the end of its end', () => {
      const resource = hemoglobin({ effectivePeriod: { start: '2024-03-01', end: '2024-03-01T10:20:00+01:00' } });
      expect(dateOf(resource)).to.deep.equal(['2024-03-01T00:00:00.000Z', '2024-03-01T09:20:00.999Z']);
    });

    it('reads a period without an end as ongoing', () => {
      expect(dateOf(hemoglobin({ effectivePeriod: { start: '2024-03' } }))).to.deep.equal([
        '2024-03-01T00:00:00.000Z',
        '9999-12-31T23:59:59.999Z',
      ]);
    });

    it('reads a period without a start as from the beginning', () => {
      expect(dateOf(hemoglobin({ effectivePeriod: { end: '2024' } }))).to.deep.equal([
        '0001-01-01T00:00:00.000Z',
        '2024-12-31T23:59:59.999Z',
      ]);
    });

    it('accepts a period that starts and ends within the same day', () => {
      expect(
        dateOf(hemoglobin({ effectivePeriod: { start: '2024-03-01T10:00:00Z', end: '2024-03-01' } })),
      ).to.deep.equal(['2024-03-01T10:00:00.000Z', '2024-03-01T23:59:59.999Z']);
    });

    it('reads an effectiveTiming from its earliest to its latest event, in any order', () => {
      const effectiveTiming = { event: ['2024-03-05T20:00:00Z', '2024-03-05T08:00:00Z', '2024-03-05T14:00:00.5Z'] };
      expect(dateOf(heartRate({ effectiveDateTime: undefined, effectiveTiming }))).to.deep.equal([
        '2024-03-05T08:00:00.000Z',
        '2024-03-05T20:00:00.999Z',
      ]);
    });

    it('has no range for an effectiveTiming without events, nor without effective[x]', () => {
      const repeating = { repeat: { frequency: 3, period: 1, periodUnit: 'd' } };
      expect(dateOf(heartRate({ effectiveDateTime: undefined, effectiveTiming: repeating }))).to.equal(null);
      expect(dateOf(heartRate({ effectiveDateTime: undefined }))).to.equal(null);
    });

    it('gives each observation dates of its own', () => {
      const first = normalize(hemoglobin({ effectivePeriod: { start: '2024-03-01' } }));
      first.date!.end.setTime(0);
      expect(normalize(hemoglobin({ effectivePeriod: { start: '2024-03-01' } })).date!.end.toISOString()).to.equal(
        '9999-12-31T23:59:59.999Z',
      );
    });
  });

  describe('security labels', () => {
    it('counts an unlabelled observation as normal, with no sensitivity', () => {
      expect(normalize(heartRate())).to.include({ confidentiality: 'N' });
      expect(normalize(heartRate()).sensitivity).to.deep.equal([]);
    });

    it('reads the confidentiality and the sensitivity categories', () => {
      const observation = normalize(hemoglobin({ meta: { security: [confidentiality('R'), sensitivity('HIV')] } }));
      expect(observation.confidentiality).to.equal('R');
      expect(observation.sensitivity).to.deep.equal(['HIV']);
    });

    it('sorts the sensitivity codes and drops repeats', () => {
      const security = [sensitivity('PSY'), confidentiality('R'), sensitivity('HIV'), sensitivity('PSY')];
      expect(normalize(hemoglobin({ meta: { security } })).sensitivity).to.deep.equal(['HIV', 'PSY']);
    });

    it('takes the same confidentiality label twice as one', () => {
      expect(
        normalize(hemoglobin({ meta: { security: [confidentiality('R'), confidentiality('R')] } })).confidentiality,
      ).to.equal('R');
    });

    it('ignores labels of other systems', () => {
      const security = [
        { system: 'http://terminology.hl7.org/CodeSystem/v3-ActReason', code: 'HTEST' },
        { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'redacted' },
        { system: ACT_CODE, code: 'PSY' },
      ];
      const observation = normalize(
        hemoglobin({ meta: { versionId: '3', lastUpdated: '2024-03-01T11:00:00Z', security } }),
      );
      expect(observation).to.include({ confidentiality: 'N' });
      expect(observation.sensitivity).to.deep.equal(['PSY']);
    });
  });
});
