// The durable outbox on the real database: events committed with their change, dropped when the change
// decided nothing, and, when the process died between the two, settled by what the changed document holds:
// dropped only once that document rules the change out, never while the change may still land.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MongoEventQueue } from '../../../../api/src/features/events/event-queue.js';
import { Outbox } from '../../../../api/src/features/events/outbox.js';
import { OutboxRecovery, type Recovery } from '../../../../api/src/features/events/outbox-recovery.js';
import { createOutboxIndexes } from '../../../../api/src/features/events/outbox-collection.js';
import { PatientRepository } from '../../../../api/src/features/patients/store.js';
import { DependencyUnavailableError } from '#core/errors.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { withTestDatabase, type TestDatabase } from '../../../../testkit/database.js';
import { until } from '../../../../testkit/until.js';

describe('events: the durable outbox', () => {
  let database: TestDatabase;
  let clock: ManualClock;
  let outbox: Outbox;
  let queue: MongoEventQueue;
  let recoverer: OutboxRecovery;
  let patients: PatientRepository;
  const tenant = randomUUID();
  withTestDatabase((opened) => (database = opened));

  beforeEach(async () => {
    // Each test starts from an empty outbox: a staged event another test left waiting is not this one's.
    await database.db.collection('outbox_events').deleteMany({});
    clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z'));
    outbox = new Outbox(database.db, database.locks, clock, { stageMs: 60_000 });
    queue = new MongoEventQueue(database.db, database.locks, clock);
    recoverer = new OutboxRecovery(database.db, database.locks, { stageMs: 60_000 });
    await createOutboxIndexes(database.db);
    patients = new PatientRepository(database.db, database.locks);
  });

  const newPatient = () => {
    const id = randomUUID();
    return {
      id,
      tenantId: tenant,
      givenName: 'Ada',
      familyName: 'Lovelace',
      createdAt: clock.now(),
      updatedAt: clock.now(),
      version: 1,
      deletedAt: null,
    };
  };
  const statusOf = async (id: string) => (await queue.get(id))?.status ?? 'absent';
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

  it('answers a change that happened even when its commit fails, and commits it a moment later', async () => {
    // The outbox's writes take their lock in Redis on the embedded database; here Redis stalls right after the change.
    let refusing = false;
    const locks = {
      atomic: false,
      withLock: <T>(key: string, write: () => Promise<T>): Promise<T> =>
        refusing && key.startsWith('outbox_events:')
          ? Promise.reject(new DependencyUnavailableError('Redis'))
          : database.locks.withLock(key, write),
    };
    const stalling = new Outbox(database.db, locks, clock, { stageMs: 60_000 });
    const committed: string[] = [];
    stalling.onCommit((ids) => committed.push(...ids));
    const patient = newPatient();
    const event = stalling.event('patient.created', tenant, `patient:${patient.id}`, { patientId: patient.id });
    const result = await stalling.record([event], patients.target(tenant, patient.id, 1), async (changeId) => {
      await patients.insert(patient, changeId);
      refusing = true;
      return patient;
    });
    expect(result).to.equal(patient);
    expect(await statusOf(event.id)).to.equal('staged');
    refusing = false;
    expect(
      await until('the commit a moment later', async () =>
        (await statusOf(event.id)) === 'staged' ? undefined : statusOf(event.id),
      ),
    ).to.equal('pending');
    expect(committed).to.deep.equal([event.id]);
  });

  it('drops the events of a change that decided there was nothing to do', async () => {
    const event = outbox.event('patient.deleted', tenant, 'patient:x', { patientId: 'x' });
    expect(await outbox.record([event], patients.target(tenant, 'x', 2), async () => undefined)).to.equal(undefined);
    expect(await statusOf(event.id)).to.equal('absent');
  });

  const recovery = (counts: Partial<Recovery>): Recovery => ({
    committed: 0,
    dropped: 0,
    waiting: 0,
    abandoned: 0,
    ...counts,
  });

  it('keeps the events of a change that threw, and recovery commits each whose change the database holds', async () => {
    // The insert happened but its answer was lost; the other change was never written.
    const written = newPatient();
    const lost = outbox.event('patient.created', tenant, `patient:${written.id}`, { patientId: written.id });
    await outbox
      .record([lost], patients.target(tenant, written.id, 1), async (changeId) => {
        await patients.insert(written, changeId);
        throw new Error('connection reset');
      })
      .catch(() => undefined);
    const never = newPatient();
    const unwritten = outbox.event('patient.created', tenant, `patient:${never.id}`, { patientId: never.id });
    await outbox.record([unwritten], patients.target(tenant, never.id, 1), failed('refused')).catch(() => undefined);
    expect([await statusOf(lost.id), await statusOf(unwritten.id)]).to.deep.equal(['staged', 'staged']);

    expect(await recoverer.recoverStaged(clock.now())).to.deep.equal(recovery({})); // the change may still be under way
    clock.advance(61_000);
    expect(await recoverer.recoverStaged(clock.now())).to.deep.equal(recovery({ committed: 1, waiting: 1 }));
    expect([await statusOf(lost.id), await statusOf(unwritten.id)]).to.deep.equal(['pending', 'staged']);
  });

  it('commits the events of a change that threw and whose write landed only after the staging window (a stalled database)', async () => {
    const patient = newPatient();
    const event = outbox.event('patient.created', tenant, `patient:${patient.id}`, { patientId: patient.id });
    let late: (() => Promise<void>) | undefined;
    await outbox
      .record([event], patients.target(tenant, patient.id, 1), async (changeId) => {
        late = () => patients.insert(patient, changeId); // sent, but applied only when the database resumes
        throw new Error('operation timed out');
      })
      .catch(() => undefined);
    clock.advance(61_000);
    expect(await recoverer.recoverStaged(clock.now())).to.deep.equal(recovery({ waiting: 1 }));
    clock.advance(10 * 60_000);
    await late!();
    expect(await recoverer.recoverStaged(clock.now())).to.deep.equal(recovery({ committed: 1 }));
    expect(await statusOf(event.id)).to.equal('pending');
  });

  it('asks again less and less often, and abandons an event whose change is still unwritten after a day', async () => {
    const patient = newPatient();
    const event = outbox.event('patient.created', tenant, `patient:${patient.id}`, { patientId: patient.id });
    await outbox.record([event], patients.target(tenant, patient.id, 1), failed('refused')).catch(() => undefined);
    let looks = 0;
    for (let minutes = 5; minutes < 24 * 60; minutes += 5) {
      clock.advance(5 * 60_000);
      looks += (await recoverer.recoverStaged(clock.now())).waiting;
    }
    expect(await statusOf(event.id)).to.equal('staged');
    expect(looks).to.be.within(5, 40);
    clock.advance(2 * 60 * 60_000);
    expect(await recoverer.recoverStaged(clock.now())).to.deep.equal(recovery({ abandoned: 1 }));
    expect(await statusOf(event.id)).to.equal('absent');
  });

  it('commits the events of a change that reported nothing to do although its write landed (a retry meeting its first attempt)', async () => {
    const patient = newPatient();
    const event = outbox.event('patient.created', tenant, `patient:${patient.id}`, { patientId: patient.id });
    const result = await outbox.record([event], patients.target(tenant, patient.id, 1), async (changeId) => {
      await patients.insert(patient, changeId);
      return undefined; // as a store that reads the retry's duplicate key as "someone else was first" would
    });
    expect(result).to.equal(undefined);
    expect(await statusOf(event.id)).to.equal('pending');
  });

  it('does not take a change of the same document by someone else for the staged one', async () => {
    const patient = newPatient();
    await patients.insert(patient, 'creation');
    const event = outbox.event('patient.deleted', tenant, `patient:${patient.id}`, { patientId: patient.id });
    await outbox
      .record([event], patients.target(tenant, patient.id, 2), failed('crashed before the delete'))
      .catch(() => undefined);
    await patients.softDelete(tenant, patient.id, 1, clock.now(), 'someone-else'); // another request deleted it
    clock.advance(61_000);
    // Version 2 is someone else's: the staged delete, conditional on version 1, can never apply.
    expect(await recoverer.recoverStaged(clock.now())).to.deep.equal(recovery({ dropped: 1 }));
  });

  it('commits a change that outlived its staging window, and even one that recovery abandoned', async () => {
    const patient = newPatient();
    const event = outbox.event('patient.created', tenant, `patient:${patient.id}`, { patientId: patient.id });
    await outbox.record([event], patients.target(tenant, patient.id, 1), async (changeId) => {
      clock.advance(61_000);
      expect(await recoverer.recoverStaged(clock.now())).to.deep.equal(recovery({ waiting: 1 })); // not written yet
      await patients.insert(patient, changeId);
      return patient;
    });
    expect(await statusOf(event.id)).to.equal('pending');

    const slow = newPatient();
    const abandoned = outbox.event('patient.created', tenant, `patient:${slow.id}`, { patientId: slow.id });
    await outbox.record([abandoned], patients.target(tenant, slow.id, 1), async (changeId) => {
      clock.advance(25 * 60 * 60_000);
      expect(await recoverer.recoverStaged(clock.now())).to.deep.equal(recovery({ abandoned: 1 }));
      await patients.insert(slow, changeId);
      return slow;
    });
    expect(await statusOf(abandoned.id)).to.equal('pending');
  });

  it('lets one dispatcher at a time hold a committed event, and another take it once the lease ends', async () => {
    const event = outbox.event('webhook_endpoint.disabled', tenant, 'webhook_endpoint:x', {
      webhookEndpointId: 'x',
      reason: 'test',
    });
    await outbox.append([event]);
    const lease = () => new Date(clock.now().getTime() + 60_000);
    expect(await queue.claim(event.id, 'a', lease(), clock.now())).to.deep.include({ claims: 1 });
    expect(await queue.claim(event.id, 'b', lease(), clock.now())).to.equal(null);
    expect(await queue.unclaimed(clock.now(), 10)).to.not.include(event.id);
    clock.advance(61_000);
    expect(await queue.unclaimed(clock.now(), 10)).to.include(event.id);
    expect(await queue.claim(event.id, 'b', lease(), clock.now())).to.deep.include({ claims: 2 });
    await queue.markDispatched(event.id, 'a'); // no longer a's: nothing happens
    expect(await statusOf(event.id)).to.equal('pending');
    await queue.markDispatched(event.id, 'b');
    expect(await statusOf(event.id)).to.equal('dispatched');
  });
});
