// The read-through cache: misses that come together share one load, and an invalidation is never undone by
// a load that started before it.
import { expect } from 'chai';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';

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

  it('keeps no miss unless asked to, and forgets a remembered miss on invalidation', async () => {
    const hub = await CacheHub.create();
    const plain = hub.cache<Box>('plain', { max: 10, ttlMs: 60_000 });
    const remembering = hub.cache<Box>('remembering', { max: 2, ttlMs: 60_000, missTtlMs: 60_000 });
    let loads = 0;
    const none = async () => ((loads += 1), null);
    await plain.getOrLoad('a', none);
    await plain.getOrLoad('a', none);
    expect(loads).to.equal(2);
    loads = 0;
    await remembering.getOrLoad('a', none);
    expect(await remembering.getOrLoad('a', none)).to.equal(null);
    expect(loads).to.equal(1);
    remembering.invalidate('a');
    expect((await remembering.getOrLoad('a', async () => ({ value: 5 })))?.value).to.equal(5);
    // Misses are held apart from values: more misses than `max` evict misses, never the values.
    for (const key of ['m1', 'm2', 'm3']) await remembering.getOrLoad(key, none);
    expect((await remembering.getOrLoad('a', async () => ({ value: 6 })))?.value).to.equal(5);
  });

  it('does not remember a miss whose load an invalidation overtook', async () => {
    const cache = (await CacheHub.create()).cache<Box>('boxes', { max: 10, ttlMs: 60_000, missTtlMs: 60_000 });
    const gate = deferred<null>();
    const first = cache.getOrLoad('a', () => gate.promise);
    cache.invalidate('a'); // the value was written meanwhile
    gate.resolve(null);
    expect(await first).to.equal(null);
    expect((await cache.getOrLoad('a', async () => ({ value: 7 })))?.value).to.equal(7);
  });
});
