// What a sync run reads (api/src/features/connections/sync/plan.ts) and which types a full run may remove from
// (type-tallies.ts): the scope's types, the registration's searches, the references it follows and their cap.
import { expect } from 'chai';
import {
  collectReferences,
  coveredTypes,
  firstPageOf,
  MAX_REFERENCES,
  planOf,
} from '../../../../../api/src/features/connections/sync/plan.js';
import { typesReadWhole } from '../../../../../api/src/features/connections/sync/type-tallies.js';
import type { SyncRun } from '../../../../../api/src/features/connections/sync/store.js';

const BASE = 'https://ehr.example.org/fhir/r4';

describe('connections: what a sync run reads', () => {
  it('covers the types the granted scope names, v1 and v2; patient/* covers all', () => {
    expect(
      coveredTypes('launch/patient patient/Condition.rs patient/Encounter.read patient/Goal.c', [
        'Condition',
        'Encounter',
        'Goal',
      ]),
    ).to.deep.equal(['Condition', 'Encounter']);
    expect(coveredTypes('patient/*.rs', ['Condition', 'Goal'])).to.deep.equal(['Condition', 'Goal']);
  });

  it('plans the patient, then each listed type, a registration’s searches in place of the plain one', () => {
    const plan = planOf(new Set(['Patient', 'Observation', 'Condition']), 'patient/*.rs', {
      Observation: ['category=laboratory', 'category=vital-signs'],
    });
    expect(plan).to.deep.equal([
      'Patient',
      'Condition',
      'Observation?category=laboratory',
      'Observation?category=vital-signs',
    ]);
    expect(firstPageOf(BASE, plan[2]!, 'p-1', '2026-01-01T00:00:00Z')).to.equal(
      `${BASE}/Observation?patient=p-1&category=laboratory&_count=100&_lastUpdated=ge2026-01-01T00%3A00%3A00Z`,
    );
    expect(firstPageOf(BASE, 'Patient', 'p-1', null)).to.equal(`${BASE}/Patient/p-1`);
  });

  it('follows references to referenced types, relative or on the server’s base, at most MAX_REFERENCES', () => {
    const into = new Set<string>();
    collectReferences(
      {
        performer: [{ reference: 'Practitioner/pr-1' }, { reference: `${BASE}/Organization/org-1` }],
        subject: { reference: 'Patient/p-1' }, // not a referenced type
        location: { reference: 'https://elsewhere.example/fhir/Location/l-1' }, // another server's
      },
      BASE,
      into,
    );
    expect([...into]).to.deep.equal(['Practitioner/pr-1', 'Organization/org-1']);
    const many = {
      contained: Array.from({ length: MAX_REFERENCES + 50 }, (_, i) => ({ reference: `Practitioner/p${i}` })),
    };
    collectReferences(many, BASE, into);
    expect(into.size).to.equal(MAX_REFERENCES);
  });

  it('lets a full run remove only types it read whole: plainly searched, not refused, no invalid resource', () => {
    const run = {
      types: {
        Condition: { added: 1, updated: 0, invalid: 0, foreignPatient: 2 },
        Procedure: { added: 1, updated: 0, invalid: 1, foreignPatient: 0 },
        Immunization: { added: 0, updated: 0, invalid: 0, foreignPatient: 0, status: 'SKIPPED' },
        Observation: { added: 5, updated: 0, invalid: 0, foreignPatient: 0 },
      },
    } as unknown as SyncRun;
    const steps = ['Patient', 'Condition', 'Procedure', 'Immunization', 'Encounter', 'Observation?category=laboratory'];
    expect(typesReadWhole(run, steps)).to.deep.equal(['Patient', 'Condition', 'Encounter']);
  });
});
