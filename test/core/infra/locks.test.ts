// Document locks through Redis (core/src/infra/locks.ts) against a redis-server this file stops (SIGSTOP): a lock
// whose SET went unanswered is granted when Redis resumes, after its caller gave up; it must not then hold the
// document for its whole TTL.
import { expect } from 'chai';
import { DependencyUnavailableError } from '#core/errors.js';
import { RedisLocks } from '#core/infra/locks.js';
import { connectRedis } from '#core/infra/redis.js';
import { startPausableRedis, type PausableServer } from '../../../testkit/pausable.js';
import { until } from '../../../testkit/until.js';

describe('document locks through Redis', function () {
  this.timeout(60_000);
  let redis: PausableServer;
  before(async () => {
    redis = await startPausableRedis();
  });
  after(() => redis?.stop());

  it('releases, once Redis answers again, a lock Redis granted after its caller gave up', async () => {
    // A short command deadline, as the replicas' 2.5 s: the SET is sent, unanswered, while Redis is stopped.
    const client = await connectRedis(redis.url, 300);
    const observer = await connectRedis(redis.url, 2_500);
    // Its releases are tried every 1.5 s here (200 ms in production), so the granted lock can be seen first.
    const locks = new RedisLocks(client, 10_000, 1_000, 1_500);
    try {
      redis.pause();
      let wrote = false;
      const refused = await locks
        .withLock('patients:p-1', async () => {
          wrote = true;
        })
        .then(
          () => null,
          (error: unknown) => error,
        );
      // Refused before the write, and said so (naming the lock): nothing of it can land later.
      expect(refused).to.be.instanceOf(DependencyUnavailableError);
      expect((refused as DependencyUnavailableError).lockNotTaken).to.equal('patients:p-1');
      expect(wrote).to.equal(false);
      expect(locks.pendingReleases).to.equal(1);
      redis.resume();
      const resumed = Date.now();
      expect(await observer.exists('portico:lock:patients:p-1'), 'the stalled SET was granted on resuming').to.equal(1);
      // Redis reads the stalled SET when it resumes: the lock is granted to nobody, then handed back in a moment,
      // seen before its 10 s TTL could have ended it (a release by the TTL would prove nothing).
      await until(
        'the granted lock to be released',
        async () => (await observer.exists('portico:lock:patients:p-1')) === 0,
        {
          before: resumed + 9_000,
        },
      );
      // It is still released again every round for a TTL (a SET read late on a replaced connection), then forgotten.
      await until('the acquisition to be forgotten', () => locks.pendingReleases === 0);
      let ran = false;
      await locks.withLock('patients:p-1', async () => {
        ran = true;
      });
      expect(ran).to.equal(true);
    } finally {
      redis.resume();
      client.disconnect();
      observer.disconnect();
    }
  });
});
