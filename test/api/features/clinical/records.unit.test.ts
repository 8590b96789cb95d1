// The checks every record passes before it is stored (api/src/features/clinical/ingest/records.ts): the record
// types, HL7's schema for the type, an id, at most 1 MiB, and the patient check; and a bundle of mixed types, whose
// ids are unique per type.
import { expect } from 'chai';
import {
  readRecord,
  validateRecordBundle,
  MAX_RECORD_BYTES,
} from '../../../../api/src/features/clinical/ingest/records.js';

const condition = (patch: Record<string, unknown> = {}) => ({
  resourceType: 'Condition',
  id: 'c1',
  subject: { reference: 'Patient/p1' },
  code: { coding: [{ system: 'http://snomed.info/sct', code: '44054006' }] },
  ...patch,
});
const problemsOf = (resource: unknown, patient?: string) =>
  readRecord(resource, patient).problems.map((p) => `${p.path}: ${p.problem}`);

describe('clinical: the checks of a record of any type', () => {
  it('takes a valid record of a type, with its search values and clinical date', () => {
    const read = readRecord(condition({ recordedDate: '2024-05-01' }), 'p1');
    expect(read.problems).to.deep.equal([]);
    expect(read.observation).to.include({ resourceType: 'Condition', resourceId: 'c1' });
    expect(read.observation!.search!.code).to.deep.equal(['http://snomed.info/sct|44054006']);
    expect(read.observation!.date!.start.toISOString()).to.equal('2024-05-01T00:00:00.000Z');
  });

  it('refuses a type Portico does not keep, a record without an id, and what breaks its type’s schema', () => {
    expect(problemsOf({ resourceType: 'Claim', id: 'x' })[0]).to.match(/^resourceType: must be a record type/);
    expect(problemsOf(condition({ id: undefined }))).to.include('id: is required: records are stored by their id');
    expect(problemsOf(condition({ recordedDate: 'yesterday' }))[0]).to.match(/^recordedDate: /);
    expect(problemsOf(condition({ colour: 'blue' }))).to.include('colour: is not an element FHIR R4 defines here');
  });

  it('refuses a record over 1 MiB', () => {
    const big = condition({ note: [{ text: 'x'.repeat(MAX_RECORD_BYTES) }] });
    expect(problemsOf(big, 'p1')[0]).to.match(/^: is \d+ bytes; a record is at most 1048576 bytes$/);
  });

  it("checks the patient: the connection's, or for a connection without one a Patient at all", () => {
    expect(problemsOf(condition(), 'p2')).to.deep.equal(["subject.reference: is not the connection's patient"]);
    expect(problemsOf(condition(), undefined)).to.deep.equal([]);
    expect(problemsOf(condition({ subject: { reference: 'Group/g1' } }), undefined)).to.deep.equal([
      'subject.reference: must name the patient (Patient/<id>): records are a patient’s',
    ]);
    expect(problemsOf({ resourceType: 'Patient', id: 'p2' }, 'p1')).to.deep.equal([
      "id: is not the connection's patient",
    ]);
    // Referenced types belong to no patient.
    expect(problemsOf({ resourceType: 'Medication', id: 'm1' }, 'p1')).to.deep.equal([]);
  });

  it('checks a bundle whole: ids unique per type, one bad entry refusing all', () => {
    const bundle = (entries: unknown[]) => ({
      resourceType: 'Bundle',
      type: 'collection',
      entry: entries.map((resource) => ({ resource })),
    });
    const mixed = validateRecordBundle(
      bundle([{ resourceType: 'Patient', id: 'p1' }, condition({ id: 'p1' }), condition({ id: 'c2' })]),
      'p1',
    );
    expect(mixed.ok).to.equal(true);
    const twice = validateRecordBundle(bundle([condition(), condition()]), 'p1');
    expect(twice.ok).to.equal(false);
    expect(!twice.ok && twice.problems.map((p) => p.problem)).to.deep.equal([
      'repeats the id of entry[0]; each Condition.id may appear once',
    ]);
  });
});
