// presentAuditEvent (docs/api.md, "The access log"): an entry as an IHE BALP AuditEvent, answered or refused, valid
// FHIR R4, naming the app and the health system only when their names are known.
import { expect } from 'chai';
import { presentAuditEvent } from '../../../../api/src/features/access-log/audit-event.js';
import type { AccessEntry } from '../../../../api/src/features/access-log/store.js';
import { schemaProblems } from '../../../../api/src/features/clinical/ingest/fhir-schema.js';

const entry = (overrides: Partial<AccessEntry> = {}): AccessEntry => ({
  id: '0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b',
  createdAt: new Date('2026-12-01T10:11:12.345Z'),
  accountId: 'c4a1e7f2-58d3-4b0e-a6c9-1d2e3f4a5b6c',
  appId: '5b1d7c2e-0a9f-4e3d-8c7b-6a5f4e3d2c1b',
  appUserId: 'patient-amy',
  connectionId: '0b9e3c1e-6f4a-4d7e-9a51-2f8c0d6b7a11',
  brandId: 'mercy-health',
  interaction: 'search',
  resourceType: 'Observation',
  count: 12,
  requestId: 'req-1',
  keyId: 'key-1',
  ...overrides,
});

const details = (event: Record<string, any>) =>
  Object.fromEntries(
    (event.entity[1].detail as { type: string; valueString: string }[]).map((d) => [d.type, d.valueString]),
  );

describe('access log: the AuditEvent', () => {
  it('shows an answered search as a PatientQuery with outcome 0 and the count, named when names are known', () => {
    const event = presentAuditEvent(entry(), { app: 'Companion', brand: 'Mercy Health' }) as Record<string, any>;
    expect(event).to.deep.include({
      resourceType: 'AuditEvent',
      id: '0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b',
      recorded: '2026-12-01T10:11:12.345Z',
      action: 'E',
      outcome: '0',
      meta: {
        tag: [
          {
            system: 'https://portico.dev/fhir/CodeSystem/balp-pattern',
            code: 'PatientQuery',
            display: 'IHE BALP PatientQuery',
          },
        ],
      },
    });
    expect(event).not.to.have.property('outcomeDesc');
    expect(event.subtype[0]).to.include({ system: 'http://hl7.org/fhir/restful-interaction', code: 'search-type' });
    expect(event.agent[0].who).to.deep.equal({
      identifier: { system: 'https://portico.dev/fhir/sid/app', value: '5b1d7c2e-0a9f-4e3d-8c7b-6a5f4e3d2c1b' },
      display: 'Companion',
    });
    expect(event.agent[0].requestor).to.equal(true);
    expect(event.agent[1].who.identifier.value).to.equal('c4a1e7f2-58d3-4b0e-a6c9-1d2e3f4a5b6c');
    expect(event.entity[0].what.identifier).to.deep.equal({
      system: 'https://portico.dev/fhir/sid/app-user',
      value: 'patient-amy',
    });
    expect(event.entity[0].role.code).to.equal('1'); // Patient
    expect(event.entity[1].what.display).to.equal('Mercy Health');
    expect(event.entity[1].name).to.equal('Observation');
    expect(details(event)).to.deep.equal({
      resourceType: 'Observation',
      count: '12',
      brandId: 'mercy-health',
      requestId: 'req-1',
    });
    expect(schemaProblems('AuditEvent', event)).to.deep.equal([]);
  });

  it('shows a refusal with outcome 4, its reason and a count of 0', () => {
    const event = presentAuditEvent(entry({ interaction: 'read', count: 0, denied: 'RESOURCE_TYPE_NOT_GRANTED' }));
    expect(event).to.deep.include({ outcome: '4', outcomeDesc: 'RESOURCE_TYPE_NOT_GRANTED', action: 'R' });
    expect((event.meta as { tag: { code: string }[] }).tag[0]!.code).to.equal('PatientRead');
    expect(details(event).count).to.equal('0');
    expect(schemaProblems('AuditEvent', event)).to.deep.equal([]);
  });

  it('has no display when the app’s and the health system’s names are unknown', () => {
    const event = presentAuditEvent(entry()) as Record<string, any>;
    expect(event.agent[0].who).not.to.have.property('display');
    expect(event.entity[1].what).not.to.have.property('display');
    expect(JSON.stringify(event)).not.to.include('"display":undefined');
    expect(schemaProblems('AuditEvent', event)).to.deep.equal([]);
  });

  it('names $everything and leaves out its resource type; a Binary is a PatientRead', () => {
    const everything = presentAuditEvent(entry({ interaction: 'everything', resourceType: null, count: 50 })) as Record<
      string,
      any
    >;
    expect(everything.subtype[0].code).to.equal('operation');
    expect(everything.entity[1].name).to.equal('$everything');
    expect(details(everything)).not.to.have.property('resourceType');
    expect(details(everything).count).to.equal('50');
    const binary = presentAuditEvent(entry({ interaction: 'binary', resourceType: 'Binary', count: 1 })) as Record<
      string,
      any
    >;
    expect([binary.subtype[0].code, binary.action, binary.entity[1].name]).to.deep.equal(['read', 'R', 'Binary']);
    for (const event of [everything, binary]) expect(schemaProblems('AuditEvent', event)).to.deep.equal([]);
  });
});
