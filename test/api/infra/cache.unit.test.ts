// The read-through cache: misses that come together share one load, and an invalidation is never undone by
// a load that started before it.
import { expect } from 'chai';
import { CacheHub } from '../../../api/src/infra/cache.js';

interface Box {
  value: number;
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('SharedCache', () => {
  it('shares one load between callers that miss together', async () => {
    const cache = (await CacheHub.create()).cache<Box>('boxes', { max: 10, ttlMs: 60_000 });
    let loads = 0;
    const gate = deferred<Box>();
    const load = () => {
      loads++;
      return gate.promise;
    };
    const waiting = Promise.all([cache.getOrLoad('a', load), cache.getOrLoad('a', load), cache.getOrLoad('a', load)]);
    gate.resolve({ value: 1 });
    expect((await waiting).map((b) => b?.value)).to.deep.equal([1, 1, 1]);
    expect(loads).to.equal(1);
    expect((await cache.getOrLoad('a', load))?.value).to.equal(1);
    expect(loads).to.equal(1);
  });

  it('starts a fresh load after an invalidation, and keeps only that one', async () => {
    const cache = (await CacheHub.create()).cache<Box>('boxes', { max: 10, ttlMs: 60_000 });
    const stale = deferred<Box>();
    const first = cache.getOrLoad('a', () => stale.promise);
    cache.invalidate('a');
    const second = cache.getOrLoad('a', async () => ({ value: 2 }));
    stale.resolve({ value: 1 });
    expect((await first)?.value).to.equal(1);
    expect((await second)?.value).to.equal(2);
    expect((await cache.getOrLoad('a', async () => ({ value: 3 })))?.value).to.equal(2);
  });

  it('shares a failed load with its waiters and does not keep the failure', async () => {
    const cache = (await CacheHub.create()).cache<Box>('boxes', { max: 10, ttlMs: 60_000 });
    const gate = deferred<Box>();
    const failing = () => gate.promise.then(() => Promise.reject(new Error('database down')));
    const both = Promise.allSettled([cache.getOrLoad('a', failing), cache.getOrLoad('a', failing)]);
    gate.resolve({ value: 0 });
    expect((await both).map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    expect((await cache.getOrLoad('a', async () => ({ value: 4 })))?.value).to.equal(4);
  });
});
