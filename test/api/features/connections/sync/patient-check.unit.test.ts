// Whose record a synced resource is (docs/connecting.md, "The right patient").
import { expect } from 'chai';
import { isPatients } from '../../../../../api/src/features/connections/sync/patient-check.js';

const BASE = 'https://fhir.example.org/r4';
const observation = (reference?: string) => ({
  resourceType: 'Observation',
  id: 'o1',
  ...(reference !== undefined && { subject: { reference } }),
});

describe("sync: a resource is the connection's patient's", () => {
  it('by its compartment reference, relative or absolute on this server, with or without a version', () => {
    for (const reference of ['Patient/ada', `${BASE}/Patient/ada`, 'Patient/ada/_history/3'])
      expect(isPatients(observation(reference), 'ada', BASE), reference).to.equal(true);
    expect(isPatients({ resourceType: 'Patient', id: 'ada' }, 'ada', BASE)).to.equal(true);
    expect(
      isPatients({ resourceType: 'AllergyIntolerance', patient: { reference: 'Patient/ada' } }, 'ada', BASE),
    ).to.equal(true);
    expect(isPatients({ resourceType: 'Coverage', beneficiary: { reference: 'Patient/ada' } }, 'ada', BASE)).to.equal(
      true,
    );
  });

  it("not another patient's, one without a reference, one on another server, or a type it cannot place", () => {
    for (const reference of [
      'Patient/grace',
      'Patient/adam',
      'Group/ada',
      'https://evil.example.org/r4/Patient/ada',
      `${BASE}x/Patient/ada`,
      '#contained',
      'Patient/ada/extra',
    ])
      expect(isPatients(observation(reference), 'ada', BASE), reference).to.equal(false);
    expect(isPatients(observation(), 'ada', BASE)).to.equal(false);
    expect(isPatients({ resourceType: 'Patient', id: 'grace' }, 'ada', BASE)).to.equal(false);
    expect(isPatients({ resourceType: 'Organization', id: 'x' }, 'ada', BASE)).to.equal(false);
    expect(isPatients(null, 'ada', BASE)).to.equal(false);
    expect(isPatients({ resourceType: 'Observation', subject: 'Patient/ada' }, 'ada', BASE)).to.equal(false);
  });
});
