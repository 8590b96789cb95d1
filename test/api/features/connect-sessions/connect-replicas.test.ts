// The initiate bucket is shared by replicas: two APIs on one database and one Redis give exactly the
// bucket's worth of sessions to many concurrent initiates for one app user, whichever replica takes them;
// and a transition made on one replica reaches the other's probe cache at once.
import { expect } from 'chai';
import { TestApi } from '../../../../testkit/api.js';
import { appOf } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { until } from '../../../../testkit/until.js';

describe('sdk: connect sessions across replicas', () => {
  let primary: TestApi;
  let replica: TestApi;

  before(async () => {
    primary = await TestApi.start({ redis: true });
    replica = await TestApi.start({ redis: true, env: { MONGODB_URI: primary.config.mongodbUri! } });
    await publishTo(primary, realSources());
    await replica.services.activeCatalog.refresh();
  });
  after(async () => {
    await replica.close();
    await primary.close();
  });

  it('gives exactly 10 of 30 concurrent initiates for one app user, across two replicas', async () => {
    const tenant = await primary.tenant();
    const app = await appOf(primary, tenant);
    const brandId = primary.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    const appUserId = `bucket-${Date.now()}`;
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 ? replica : primary).request('POST', '/api/sdk/v1/connect-sessions', {
          key: app.pk,
          body: { appUserId, brandId },
        }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).to.have.length(10);
    expect(statuses.filter((s) => s === 429)).to.have.length(20);
    const refused = answers.find((a) => a.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
    // The user's bucket is empty; the key's (60 a minute) still has tokens (how many depends on when the winners
    // took theirs): a refused user takes none of them.
    expect(refused.headers.get('ratelimit')).to.match(/^"initiate";r=0;t=\d+, "initiate-key";r=(5\d|60)(;t=\d+)?$/);
    // Another user of the same account has a bucket of its own.
    expect(
      (
        await replica.request('POST', '/api/sdk/v1/connect-sessions', {
          key: app.pk,
          body: { appUserId: `${appUserId}-other`, brandId },
        })
      ).status,
    ).to.equal(201);
  });

  it("invalidates the other replica's probe cache when a transition happens", async () => {
    const tenant = await primary.tenant();
    const app = await appOf(primary, tenant);
    const brandId = primary.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    const probe = async () =>
      (await replica.request('GET', '/api/sdk/v1/app-users/cached-user/lifecycle', { key: app.pk })).body.state;
    expect(await probe()).to.equal('UNLINKED'); // now cached on the replica
    expect(
      (
        await primary.request('POST', '/api/sdk/v1/connect-sessions', {
          key: app.pk,
          body: { appUserId: 'cached-user', brandId },
        })
      ).status,
    ).to.equal(201);
    // Redis pub/sub carries the invalidation (the cache's TTL is a minute): wait for it, do not time it.
    await until('the replica to see LIMITED', async () => (await probe()) === 'LIMITED');
  });
});
