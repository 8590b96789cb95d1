// Re-sending a bundle whose ids already exist: an ordinary 200 that replaces them, while the database keeps
// answering everyone else. On the embedded database one such bundle of more than ~100 ids used to hold every
// SQLite connection of the database and lock it for every tenant (api/src/features/clinical/records/store.ts).
import { expect } from 'chai';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { appOf, connectionOf } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { buildPatient } from '../../../../testkit/factories.js';
import { manyObservations, observationBundle } from '../../../../testkit/observations.js';

const PLATFORM = '/api/platform/v1';
/** Far beyond what any of these requests takes: an answer still missing then is a lock-up. */
const HANG_MS = 30_000;

describe('platform: re-ingesting observations that exist', function () {
  this.timeout(240_000);
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;
  let brandId: string;

  before(async () => {
    api = await TestApi.start();
    await publishTo(api, realSources());
    brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    [tenant, other] = await Promise.all([api.tenant(), api.tenant()]);
  });
  after(() => api.close());

  /** Another tenant's patient creations and reads, back to back until stopped: what each was answered. */
  function otherTenantTraffic() {
    const statuses: number[] = [];
    let running = true;
    const loop = (async () => {
      while (running) {
        const created = await api.request('POST', `${PLATFORM}/patients`, {
          key: other.key,
          body: buildPatient(),
          signal: AbortSignal.timeout(HANG_MS),
        });
        statuses.push(created.status);
        if (created.status === 201)
          statuses.push(
            (
              await api.request('GET', `${PLATFORM}/patients/${created.body.id}`, {
                key: other.key,
                signal: AbortSignal.timeout(HANG_MS),
              })
            ).status,
          );
      }
    })();
    return {
      async stop() {
        running = false;
        await loop;
        return statuses;
      },
    };
  }

  for (const count of [101, 1000]) {
    it(`answers 200 with updated: ${count} for ${count} existing ids, twice, while another tenant is served`, async () => {
      const app = await appOf(api, tenant);
      const connectionId = await connectionOf(api, tenant, app, `reingest-${count}`, brandId);
      const ingest = (body: unknown) =>
        api.request('POST', `${PLATFORM}/connections/${connectionId}/observations`, {
          key: tenant.key,
          body,
          signal: AbortSignal.timeout(HANG_MS),
        });
      const resources = manyObservations(count);
      const first = await ingest(observationBundle(resources));
      expect(first.body).to.deep.equal({ ingested: count, updated: 0 });
      const observations = api.mongo.db.collection<{
        resourceId: string;
        firstIngestedAt: Date;
        resource: { note?: { text: string }[] };
      }>('observations');
      const firstIngestedAt = (await observations.findOne({ connectionId, resourceId: resources[0]!.id as string }))!
        .firstIngestedAt;

      const traffic = otherTenantTraffic();
      for (const round of [1, 2]) {
        const res = await ingest(
          observationBundle(resources.map((resource) => ({ ...resource, note: [{ text: `round ${round}` }] }))),
        );
        expect(res.status, res.text).to.equal(200);
        expect(res.body).to.deep.equal({ ingested: 0, updated: count });
      }
      const statuses = await traffic.stop();
      expect(statuses.length).to.be.greaterThan(0);
      expect(statuses.filter((status) => status !== 201 && status !== 200)).to.deep.equal([]);

      // Readers see the last round at once; its replacements are written in place after the answer.
      expect(
        (await api.services.observations.current(connectionId)).every(
          (doc) => (doc.resource as { note?: { text: string }[] }).note?.[0]?.text === 'round 2',
        ),
      ).to.equal(true);
      await api.services.observations.settled();
      const stored = await observations.find({ connectionId }).toArray();
      expect(stored).to.have.length(count);
      expect(stored.every((doc) => doc.resource.note?.[0]?.text === 'round 2')).to.equal(true);
      expect(stored.find((doc) => doc.resourceId === resources[0]!.id)!.firstIngestedAt).to.deep.equal(firstIngestedAt);
      expect((await api.request('GET', '/readyz')).status).to.equal(200);
    });
  }
});
