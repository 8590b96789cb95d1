// A take-over against an owner that is still alive. An owner's lease can run out while it still works (its
// renewals failed: Redis or the database stalled), and a retry may then take the claim over. The retry judges
// the claim by what it read; if the owner records a recovery point, and writes, between that read and the
// take-over, a take-over made on the old read runs the operation a second time. Found by the fault suite
// (test/faults) as two patients for one key under a paused Redis. The store's calls are held by promises the
// test releases, and time is a manual clock: the interleaving is forced, not hoped for.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, withTestApi, type Tenant } from '../../../../testkit/api.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { patchStore } from '../../../../testkit/idempotency.js';
import { buildPatient } from '../../../../testkit/factories.js';
import { LEASE_MS } from '../../../../api/src/shared/http/idempotency.js';

const PATIENTS = '/api/platform/v1/patients';

function signal(): { promise: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

describe('http: idempotency take-over against an owner still alive', () => {
  let api: TestApi;
  let tenant: Tenant;
  const clock = new ManualClock();
  withTestApi((started) => ({ api, tenant } = started), { clock });

  it('does not take over a claim written since the retry read it: the owner executes alone and the retry is told it is in use', async () => {
    const key = `idem-${randomUUID()}`;
    const patient = buildPatient();
    const post = () =>
      api.request('POST', PATIENTS, { key: tenant.key, body: patient, headers: { 'idempotency-key': key } });

    // The owner (A) stops just before recording the recovery point of its patient insert.
    const atPatientPoint = signal();
    const goOn = signal();
    const recorded = signal();
    const restoreAdd = patchStore(api, 'addTarget', (addTarget) => async (scope, owner, target, leaseUntil) => {
      if (target.collection !== 'patients') return addTarget(scope, owner, target, leaseUntil);
      atPatientPoint.fire();
      await goOn.promise;
      // Recorded now, so with the lease a point recorded now gets.
      const added = await addTarget(scope, owner, target, clock.now().getTime() + LEASE_MS);
      recorded.fire();
      return added;
    });
    // The retry (B) has read the claim with its lease run out; A records its point (and writes) before B's take-over.
    const restoreTakeOver = patchStore(api, 'takeOver', (takeOver) => async (...args) => {
      goOn.fire();
      await recorded.promise;
      return takeOver(...args);
    });
    try {
      const owner = post();
      await atPatientPoint.promise;
      clock.advance(LEASE_MS + 1_000);
      const retry = await post();
      expect(retry.status, retry.text).to.equal(409);
      expect(retry.body.code).to.equal('IDEMPOTENCY_KEY_IN_USE');
      const done = await owner;
      expect(done.status, done.text).to.equal(201);
      expect(await api.mongo.db.collection('patients').countDocuments({ email: patient.email })).to.equal(1);
      const replay = await post();
      expect(replay).to.deep.include({ status: 201, text: done.text });
    } finally {
      restoreAdd();
      restoreTakeOver();
    }
  });
});
