// The search values kept beside each record (api/src/features/clinical/search/values.ts): a parameter that reads only
// elements a resource has not is skipped unevaluated, and that never changes what is kept.
import { expect } from 'chai';
import { syntheaFiles, syntheaPatient } from '../../../../sandbox/src/fhir/synthea.js';
import { isRecordType } from '../../../../api/src/features/clinical/record-types.js';
import { rootsOf, warmSearchDefinitions } from '../../../../api/src/features/clinical/search/definitions.js';
import { searchValues } from '../../../../api/src/features/clinical/search/values.js';
import { bloodPressure, glucose, heartRate, hemoglobin } from '../../../../testkit/observations.js';
import { usCoreExtraRecords } from '../../../../testkit/us-core-extra.js';

describe('clinical: search values of a record', function () {
  this.timeout(60_000);
  before(() => warmSearchDefinitions());

  it('names the elements an expression starts from, a choice of one type by its JSON name', () => {
    expect(rootsOf('Observation.code | Observation.component.code', 'Observation')).to.deep.equal([
      'code',
      'component',
    ]);
    expect(
      rootsOf('(Observation.value.ofType(Quantity)) | (Observation.value.ofType(SampledData))', 'Observation'),
    ).to.deep.equal(['valueQuantity', 'valueSampledData']);
    expect(rootsOf('(Observation.value.ofType(dateTime))', 'Observation')).to.deep.equal(['valueDateTime']);
    expect(rootsOf('Observation.subject.where(resolve() is Patient)', 'Observation')).to.deep.equal(['subject']);
    expect(rootsOf('Observation.code | %resource.code', 'Observation'), 'a branch from elsewhere').to.equal(null);
    expect(rootsOf('Patient.deceased.exists() and Patient.deceased != false', 'Patient'), 'false when absent').to.equal(
      null,
    );
  });

  it('keeps the same values as evaluating every parameter, for every Synthea record and the gateway’s observations', () => {
    const resources = [
      ...syntheaFiles().flatMap((file) => syntheaPatient(file).filter((r) => isRecordType(r.resourceType))),
      ...usCoreExtraRecords('p-1'),
      ...[heartRate(), glucose(), hemoglobin(), bloodPressure()],
    ] as Record<string, unknown>[];
    expect(resources.length).to.be.greaterThan(1000);
    for (const resource of resources)
      expect(searchValues(resource), `${resource.resourceType as string}/${resource.id as string}`).to.deep.equal(
        searchValues(resource, true),
      );
  });
});
