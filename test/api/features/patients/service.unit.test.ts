// The patient service's rules, without HTTP or a database: the documented check order (scope is the route's;
// then the relation-tuple check, tenant membership, the tenant's read), the uniform 403, events recorded
// with their change, and conditional deletion.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { FakeAccountStore } from '../../../../api/src/features/accounts/fake-store.js';
import { memberTuple } from '../../../../api/src/features/admin/service.js';
import { createFakeAuthz, type FakeTupleStore } from '../../../../api/src/features/authz/fake-store.js';
import { FakeOutbox } from '../../../../api/src/features/events/fake-outbox.js';
import { ACCESS_DENIED_DETAIL, type Principal } from '../../../../api/src/shared/http/auth.js';
import { createFakePatients, type FakePatientStore } from '../../../../api/src/features/patients/fake-store.js';
import type { PatientService } from '../../../../api/src/features/patients/service.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { rejection } from '../../../../testkit/expect.js';

describe('platform: patient service (unit, fake stores)', () => {
  let clock: ManualClock;
  let patients: FakePatientStore;
  let accounts: FakeAccountStore;
  let tuples: FakeTupleStore;
  let outbox: FakeOutbox;
  let service: PatientService;

  async function tenant(): Promise<Principal> {
    const accountId = randomUUID();
    const keyId = randomUUID();
    await accounts.insert({ id: accountId, name: 'Acme', status: 'ACTIVE', createdAt: clock.now() });
    await tuples.write(accountId, memberTuple(accountId, keyId));
    return { keyId, kind: 'sk', accountId, appId: null, scopes: new Set(['patient:read', 'patient:write']) };
  }

  beforeEach(() => {
    clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z'));
    accounts = new FakeAccountStore();
    outbox = new FakeOutbox(clock);
    const authz = createFakeAuthz();
    tuples = authz.tuples;
    ({ store: patients, service } = createFakePatients(clock, { accounts, outbox, authz: authz.service }));
  });

  describe('create', () => {
    it('stores the profile at version 1 with its tenant tuple, and records patient.created with it', async () => {
      const principal = await tenant();
      const created = await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' });
      expect(created).to.deep.include({
        tenantId: principal.accountId,
        version: 1,
        deletedAt: null,
        createdAt: clock.now(),
      });
      expect(await patients.find(principal.accountId, created.id)).to.deep.equal(created);
      expect(await tuples.subjects(principal.accountId, `patient:${created.id}`, 'tenant')).to.deep.equal([
        `customer_account:${principal.accountId}`,
      ]);
      expect(outbox.committed.map((e) => [e.type, e.data])).to.deep.equal([
        ['patient.created', { patientId: created.id }],
      ]);
    });

    it('refuses a birth date in the future, storing and emitting nothing', async () => {
      const principal = await tenant();
      const error = await rejection(
        service.create(principal, { givenName: 'Ada', familyName: 'Lovelace', birthDate: '2026-11-21' }),
      );
      expect(error.status).to.equal(400);
      expect(error.details).to.have.nested.property('errors[0].name', 'birthDate');
      expect(outbox.committed).to.deep.equal([]);
      expect(
        await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace', birthDate: '2026-11-20' }),
      ).to.have.property('birthDate', '2026-11-20');
    });
  });

  describe('get', () => {
    it("returns the tenant's patient", async () => {
      const principal = await tenant();
      const created = await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' });
      expect(await service.get(principal, created.id)).to.deep.equal(created);
    });

    it("answers one uniform 403 for a malformed id, an unknown id and another tenant's patient", async () => {
      const owner = await tenant();
      const caller = await tenant();
      const foreign = await service.create(owner, { givenName: 'Ada', familyName: 'Lovelace' });
      const errors = await Promise.all(
        ['not-a-uuid', randomUUID(), foreign.id].map((id) => rejection(service.get(caller, id))),
      );
      for (const error of errors)
        expect(error)
          .to.include({ code: 'PLATFORM_ACCESS_DENIED', detail: ACCESS_DENIED_DETAIL })
          .and.have.property('details')
          .that.deep.equals({});
    });

    it('denies a key whose account is suspended, even with the tuples in place', async () => {
      const principal = await tenant();
      const created = await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' });
      await accounts.setStatus(principal.accountId, 'SUSPENDED');
      expect(await rejection(service.get(principal, created.id))).to.include({ code: 'PLATFORM_ACCESS_DENIED' });
    });

    it('reads a patient never read before once, taking its tenant tuple from it (no read of the tuple)', async () => {
      const principal = await tenant();
      const created = await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' });
      const reads: string[] = [];
      const find = patients.find.bind(patients);
      patients.find = (tenantId, id) => (reads.push(`patients ${tenantId}/${id}`), find(tenantId, id));
      const subjects = tuples.subjects.bind(tuples);
      tuples.subjects = (tenantId, object, relation) => (
        reads.push(`tuples ${object}#${relation}`),
        subjects(tenantId, object, relation)
      );
      expect(await service.get(principal, created.id)).to.deep.equal(created);
      expect(reads).to.deep.equal([
        `patients ${principal.accountId}/${created.id}`,
        `tuples customer_account:${principal.accountId}#member`,
      ]);
    });

    it('answers 404, as before, for a tenant tuple whose patient was never written (a creation that stopped)', async () => {
      const principal = await tenant();
      const id = randomUUID();
      await tuples.write(principal.accountId, {
        object: `patient:${id}`,
        relation: 'tenant',
        subject: `customer_account:${principal.accountId}`,
      });
      expect(await rejection(service.get(principal, id))).to.include({ code: 'NOT_FOUND' });
    });

    it('answers 404 once the authorized patient is deleted', async () => {
      const principal = await tenant();
      const created = await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' });
      await service.delete(principal, created.id, undefined);
      expect(await rejection(service.get(principal, created.id))).to.include({ code: 'NOT_FOUND' });
    });
  });

  describe('delete', () => {
    it('deletes at the current version and records patient.deleted; again is 404 with no second event', async () => {
      const principal = await tenant();
      const created = await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' });
      clock.advance(1000);
      await service.delete(principal, created.id, { kind: 'versions', versions: ['1'] });
      expect(await patients.find(principal.accountId, created.id)).to.deep.include({
        version: 2,
        deletedAt: clock.now(),
      });
      expect(await rejection(service.delete(principal, created.id, undefined))).to.include({ code: 'NOT_FOUND' });
      expect(outbox.committed.map((e) => e.type)).to.deep.equal(['patient.created', 'patient.deleted']);
    });

    it('checks If-Match after authorization and existence: 412 naming the current version, nothing changes', async () => {
      const principal = await tenant();
      const created = await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' });
      const error = await rejection(service.delete(principal, created.id, { kind: 'versions', versions: ['7'] }));
      expect(error).to.include({ code: 'PRECONDITION_FAILED' });
      expect(error.details).to.deep.equal({ currentVersion: '1' });
      expect(await patients.find(principal.accountId, created.id)).to.deep.include({ version: 1, deletedAt: null });
      expect(
        await rejection(service.delete(principal, randomUUID(), { kind: 'versions', versions: ['7'] })),
      ).to.include({ code: 'PLATFORM_ACCESS_DENIED' });
    });

    it('gives up after losing five races with a retryable conflict that is never stored for replay', async () => {
      const principal = await tenant();
      const created = await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' });
      let attempts = 0;
      patients.softDelete = async () => (attempts++, false); // someone else's write wins every time
      const error = await rejection(service.delete(principal, created.id, undefined));
      expect(error).to.include({ code: 'CONFLICT' });
      expect(error.options.storable).to.equal(false);
      expect(attempts).to.equal(5);
      expect(outbox.committed.map((e) => e.type)).to.deep.equal(['patient.created']);
    });
  });
});
