import { expect } from 'chai';
import { plainCategories, plainCount, plainTypeName } from '../../../../api/src/features/clinical/plain-words.js';
import { COMPARTMENT_TYPES, RECORD_TYPES } from '../../../../api/src/features/clinical/record-types.js';

describe('clinical: record types in plain words', () => {
  it('names every type Portico keeps, and attachments, in words rather than FHIR names', () => {
    for (const type of [...RECORD_TYPES, 'Binary']) expect(plainTypeName(type), type).to.not.equal(type);
    expect(plainTypeName('Observation')).to.equal('Lab results and vital signs');
    expect(plainTypeName('AllergyIntolerance')).to.equal('Allergies');
    expect(plainTypeName('DiagnosticReport')).to.equal('Lab reports');
    expect(plainTypeName('PractitionerRole')).to.equal(plainTypeName('Practitioner'));
  });

  it('keeps the FHIR name of a type it has no words for', () => {
    expect(plainTypeName('Basic')).to.equal('Basic');
    expect(plainCount('Basic', 2)).to.equal('2 Basic');
  });

  it('counts in the singular for one and the plural otherwise', () => {
    expect(plainCount('Observation', 42)).to.equal('42 lab results and vital signs');
    expect(plainCount('Observation', 1)).to.equal('1 lab result or vital sign');
    expect(plainCount('Observation', 0)).to.equal('0 lab results and vital signs');
    expect(plainCount('MedicationRequest', 1)).to.equal('1 medication');
    expect(plainCount('Patient', 1)).to.equal('1 demographics record');
    expect(plainCount('Encounter', 1200)).to.equal('1,200 visits');
  });

  it('lists a grant once per category, in the same order whatever the grant lists first', () => {
    expect(plainCategories(['MedicationDispense', 'Observation', 'MedicationRequest', 'Observation'])).to.deep.equal([
      'Lab results and vital signs',
      'Medications',
    ]);
    expect(plainCategories(['Condition', 'Medication'])).to.deep.equal(['Medications', 'Conditions (health problems)']);
  });

  it('reads * as every compartment type, without the people and places records name', () => {
    const all = plainCategories(['*']);
    expect(all[0]).to.equal('Lab results and vital signs');
    expect(all).to.include.members(['Medications', 'Allergies', 'Your demographics', 'Record history', 'Visits']);
    expect(new Set(all).size).to.equal(all.length);
    // One category per compartment type, the three medication types being one.
    expect(all).to.have.length(COMPARTMENT_TYPES.length - 1);
    expect(all).to.not.include.members(['Doctors and care providers', 'Organizations', 'Locations']);
    expect(plainCategories(['Observation', 'Practitioner', 'Location'])).to.deep.equal(['Lab results and vital signs']);
  });

  it('lists nothing for a grant of nothing', () => {
    expect(plainCategories([])).to.deep.equal([]);
  });
});
