// The right patient (docs/connecting.md): a connection holds one patient's records, whatever its health system
// answers. A refresh that names another patient ends the connection's tokens (REAUTHORIZATION_REQUIRED,
// `patient_mismatch`); a synced record of another patient is skipped, counted and never stored.
import { expect } from 'chai';
import { ShiftedClock } from '../../../../../testkit/clock.js';
import { eventsOf } from '../../../../../testkit/events.js';
import { connectThroughBrowser, startSmartWorld, until, type SmartWorld } from '../../../../../testkit/smart.js';

describe('the right patient (sandbox EHR)', function () {
  this.timeout(90_000);
  let world: SmartWorld;
  const clock = new ShiftedClock();
  before(async () => {
    world = await startSmartWorld({ clock, env: { PORTICO_SYNC_INTERVAL: '1000h' } });
  });
  after(() => world?.close());

  const appUser = (id: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });
  const settledSync = (appUserId: string, since: string | null) =>
    until(
      `a sync of ${appUserId}`,
      () => appUser(appUserId),
      (res) => {
        const sync = res.body.connections[0]?.sync;
        return sync?.status === 'FAILED' || (sync?.status === 'IDLE' && ![null, since].includes(sync.lastSyncedAt));
      },
    ).then((res) => res.body.connections[0]);
  const gatewayTotal = async (connectionId: string) =>
    (
      await world.api.request('GET', `/api/sdk/v1/fhir/connections/${connectionId}/Observation?_count=1`, {
        key: world.app.ak,
      })
    ).body.total as number;

  it("skips and counts another patient's records in a page, storing none of them", async () => {
    world.ehr.switches.foreignPatientEvery = 10;
    try {
      const { back } = await connectThroughBrowser(world, 'public-v2', 'patient-foreign');
      const connectionId = back.searchParams.get('connectionId')!;
      const first = await settledSync('patient-foreign', null);
      expect(first.sync).to.include({ lastError: null, foreignPatient: 23, skipped: 0, observations: 207 });
      expect(await gatewayTotal(connectionId)).to.equal(207);
      const stored = await world.api.mongo.db
        .collection('observations')
        .countDocuments({ 'resource.subject.reference': 'Patient/someone-else' });
      expect(stored).to.equal(0);
    } finally {
      world.ehr.switches.foreignPatientEvery = null;
    }
  });

  it('gives up the tokens of a connection whose refresh names another patient (patient_mismatch)', async () => {
    const { back } = await connectThroughBrowser(world, 'public-v2', 'patient-refresh');
    const connectionId = back.searchParams.get('connectionId')!;
    const first = await settledSync('patient-refresh', null);
    world.ehr.switches.refreshPatient = 'grace';
    try {
      world.ehr.switches.expireAccessTokens();
      const revocations = world.ehr.stats.revocations;
      clock.advance(61_000);
      await world.api.request('POST', `/api/platform/v1/connections/${connectionId}/sync`, { key: world.tenant.key });
      const failed = await settledSync('patient-refresh', first.sync.lastSyncedAt);
      expect(failed).to.deep.include({ status: 'REAUTHORIZATION_REQUIRED', statusReason: 'patient_mismatch' });
      expect(failed.sync.lastError).to.equal('reauthorization_required');
      expect(await world.api.mongo.db.collection('connection_tokens').findOne({ _id: connectionId as never })).to.equal(
        null,
      );
      // Neither grant is kept: what the refresh handed out, and the refresh token it was asked with, are revoked.
      await world.api.services.connections.vault.settled();
      expect(world.ehr.stats.revocations).to.equal(revocations + 2);
      const events = await eventsOf(world.api.mongo.db, world.tenant.accountId);
      expect(events.map((e) => e.data)).to.deep.include({
        connectionId,
        appUserId: 'patient-refresh',
        brandId: world.brands['public-v2'],
        reason: 'patient_mismatch',
      });
      // The records synced before stay served until the patient signs in again.
      expect(await gatewayTotal(connectionId)).to.equal(230);
    } finally {
      world.ehr.switches.refreshPatient = null;
    }
  });
});
