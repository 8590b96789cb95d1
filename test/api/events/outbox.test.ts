// The durable outbox on the real database: events committed with their change, dropped when the change
// decided nothing, and, when the process died between the two, settled by what the changed document holds.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Outbox } from '../../../api/src/events/outbox.js';
import { PatientRepository } from '../../../api/src/platform/patients/repository.js';
import { ManualClock } from '../../support/clock.js';
import { withTestDatabase, type TestDatabase } from '../../support/database.js';

describe('events: the durable outbox', () => {
  let database: TestDatabase;
  let clock: ManualClock;
  let outbox: Outbox;
  let patients: PatientRepository;
  const tenant = randomUUID();
  withTestDatabase((opened) => (database = opened));

  beforeEach(async () => {
    clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z'));
    outbox = new Outbox(database.db, database.locks, clock, { stageMs: 60_000 });
    await outbox.init();
    patients = new PatientRepository(database.db, database.locks);
  });

  const newPatient = () => {
    const id = randomUUID();
    return { id, tenantId: tenant, givenName: 'Ada', familyName: 'Lovelace', createdAt: clock.now(), updatedAt: clock.now(), version: 1, deletedAt: null };
  };
  const statusOf = async (id: string) => (await outbox.get(id))?.status ?? 'absent';
  const failed = (message: string) => async (): Promise<undefined> => {
    throw new Error(message);
  };

  it('commits the events of a change that happened and tells its listeners', async () => {
    const committed: string[] = [];
    outbox.onCommit((ids) => committed.push(...ids));
    const patient = newPatient();
    const event = outbox.event('patient.created', tenant, `patient:${patient.id}`, { patientId: patient.id });
    await outbox.record([event], patients.target(tenant, patient.id, 1), async (changeId) => {
      expect(await statusOf(event.id)).to.equal('staged'); // staged before the change
      await patients.insert(patient, changeId);
      return patient;
    });
    expect(await statusOf(event.id)).to.equal('pending');
    expect(committed).to.deep.equal([event.id]);
  });

  it('drops the events of a change that decided there was nothing to do', async () => {
    const event = outbox.event('patient.deleted', tenant, 'patient:x', { patientId: 'x' });
    expect(await outbox.record([event], patients.target(tenant, 'x', 2), async () => undefined)).to.equal(undefined);
    expect(await statusOf(event.id)).to.equal('absent');
  });

  it('keeps the events of a change that threw, and recovery commits or drops each by what the database holds', async () => {
    // The insert happened but its answer was lost; the other change never happened.
    const written = newPatient();
    const lost = outbox.event('patient.created', tenant, `patient:${written.id}`, { patientId: written.id });
    await outbox
      .record([lost], patients.target(tenant, written.id, 1), async (changeId) => {
        await patients.insert(written, changeId);
        throw new Error('connection reset');
      })
      .catch(() => undefined);
    const never = newPatient();
    const invented = outbox.event('patient.created', tenant, `patient:${never.id}`, { patientId: never.id });
    await outbox.record([invented], patients.target(tenant, never.id, 1), failed('refused')).catch(() => undefined);
    expect([await statusOf(lost.id), await statusOf(invented.id)]).to.deep.equal(['staged', 'staged']);

    expect(await outbox.recoverStaged(clock.now())).to.deep.equal({ committed: 0, dropped: 0 }); // the change may still be under way
    clock.advance(61_000);
    expect(await outbox.recoverStaged(clock.now())).to.deep.equal({ committed: 1, dropped: 1 });
    expect([await statusOf(lost.id), await statusOf(invented.id)]).to.deep.equal(['pending', 'absent']);
  });

  it('does not take a change of the same document by someone else for the staged one', async () => {
    const patient = newPatient();
    await patients.insert(patient, 'creation');
    const event = outbox.event('patient.deleted', tenant, `patient:${patient.id}`, { patientId: patient.id });
    await outbox.record([event], patients.target(tenant, patient.id, 2), failed('crashed before the delete')).catch(() => undefined);
    await patients.softDelete(tenant, patient.id, 1, clock.now(), 'someone-else'); // another request deleted it
    clock.advance(61_000);
    expect(await outbox.recoverStaged(clock.now())).to.deep.equal({ committed: 0, dropped: 1 });
  });

  it('commits a change that outlived its staging window, even after recovery dropped its events', async () => {
    const patient = newPatient();
    const event = outbox.event('patient.created', tenant, `patient:${patient.id}`, { patientId: patient.id });
    await outbox.record([event], patients.target(tenant, patient.id, 1), async (changeId) => {
      clock.advance(61_000);
      expect(await outbox.recoverStaged(clock.now())).to.deep.equal({ committed: 0, dropped: 1 }); // not written yet
      await patients.insert(patient, changeId);
      return patient;
    });
    expect(await statusOf(event.id)).to.equal('pending');
  });

  it('lets one dispatcher at a time hold a committed event, and another take it once the lease ends', async () => {
    const event = outbox.event('webhook_endpoint.disabled', tenant, 'webhook_endpoint:x', { webhookEndpointId: 'x', reason: 'test' });
    await outbox.append([event]);
    const lease = () => new Date(clock.now().getTime() + 60_000);
    expect(await outbox.claim(event.id, 'a', lease(), clock.now())).to.deep.include({ claims: 1 });
    expect(await outbox.claim(event.id, 'b', lease(), clock.now())).to.equal(null);
    expect(await outbox.unclaimed(clock.now(), 10)).to.not.include(event.id);
    clock.advance(61_000);
    expect(await outbox.unclaimed(clock.now(), 10)).to.include(event.id);
    expect(await outbox.claim(event.id, 'b', lease(), clock.now())).to.deep.include({ claims: 2 });
    await outbox.markDispatched(event.id, 'a'); // no longer a's: nothing happens
    expect(await statusOf(event.id)).to.equal('pending');
    await outbox.markDispatched(event.id, 'b');
    expect(await statusOf(event.id)).to.equal('dispatched');
  });
});
