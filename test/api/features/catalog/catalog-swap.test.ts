// Rolling out a snapshot: replicas pick it up without a restart (Redis announcement, or polling alone)
// and no request fails or mixes snapshots during the swap.
import { expect } from 'chai';
import { publishCatalog } from '../../../../operator/src/pipeline/publish.js';
import { announceActivation } from '#core/catalog/announce.js';
import { connectRedis } from '#core/infra/redis.js';
import { TestApi } from '../../../../testkit/api.js';
import { publishTo, realSource, realSources } from '../../../../testkit/catalog.js';
import { testRedisUrl } from '../../../../testkit/services.js';
import { until } from '../../../../testkit/until.js';

const SEARCH = '/api/sdk/v1/catalog/brands?q=mercy&limit=100';

describe('sdk: catalog hot swap', () => {
  it('serves a newly activated snapshot under concurrent load with no failed or mixed response', async () => {
    const api = await TestApi.start();
    try {
      const small = [realSource('epic', 'fhir-endpoint-bundle', 'epic-legacy-2022/epic_endpoints_r4.json', 'EPIC')];
      const before = await publishTo(api, small);
      const oldCount = (await api.request('GET', SEARCH)).body.count as number;

      let publishing = true;
      const answers: { status: number; etag: string; count: number }[] = [];
      const load = Array.from({ length: 8 }, async () => {
        while (publishing) {
          const res = await api.request('GET', SEARCH);
          answers.push({ status: res.status, etag: res.headers.get('etag') ?? '', count: res.body?.count });
        }
      });
      const after = await publishTo(api, realSources());
      // The load goes on until it has seen the new snapshot served, however long a busy machine takes.
      await until(
        'answers from the new snapshot',
        () => answers.length > 20 && answers.some((a) => a.etag.includes(after.snapshot.id)),
      );
      publishing = false;
      await Promise.all(load);

      const newCount = (await api.request('GET', SEARCH)).body.count as number;
      expect(newCount).to.be.greaterThan(oldCount);
      expect(answers.length).to.be.greaterThan(20);
      expect(answers.filter((a) => a.status !== 200)).to.deep.equal([]);
      for (const answer of answers) {
        const snapshot = answer.etag.slice(1).split('.')[0];
        expect([before.snapshot.id, after.snapshot.id]).to.include(snapshot);
        expect(answer.count).to.equal(snapshot === before.snapshot.id ? oldCount : newCount);
      }
      expect(answers.some((a) => a.etag.includes(after.snapshot.id))).to.equal(true);
    } finally {
      await api.close();
    }
  });

  for (const redis of [false, true]) {
    it(`picks up a snapshot activated by another process (${redis ? 'Redis announcement, before the first poll' : 'polling only'})`, async () => {
      const api = await TestApi.start({ redis, env: { PORTICO_CATALOG_POLL_MS: redis ? '60000' : '1000' } });
      const firstPoll = Date.now() + 60_000;
      try {
        const announcer = redis ? await connectRedis(testRedisUrl()) : undefined;
        // Published the way the operator does it: straight into MongoDB, not through this API's objects.
        const report = await publishCatalog({
          ref: api.config.catalog,
          spec: { rollout: { retainSnapshots: 3, minBrandRatioPercent: 0 } },
          sources: realSources(),
          store: api.services.snapshots,
          storage: api.services.storage,
          ...(announcer && { announce: (id: string) => announceActivation(announcer, api.config.catalog, id) }),
        });
        // With Redis the poll interval is a minute (the most the configuration allows), and the swap must be seen
        // before the first poll could have come: only the announcement can explain it.
        await until(
          'the new snapshot served',
          () => api.services.activeCatalog.get()?.snapshotId === report.snapshot.id,
          { timeoutMs: 30_000, ...(redis && { before: firstPoll }) },
        );
        expect((await api.request('GET', SEARCH)).body.count).to.be.greaterThan(0);
        await announcer?.quit();
      } finally {
        await api.close();
      }
    });
  }
});
