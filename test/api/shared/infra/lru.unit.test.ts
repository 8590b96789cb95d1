import { expect } from 'chai';
import { lruCache } from '../../../../api/src/shared/infra/lru.js';

describe('infra: entry-bounded LRU caches', () => {
  it('holds at most its number of entries, evicting the least recently used first', () => {
    const cache = lruCache<string, number>(3);
    for (const [key, value] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ] as const)
      cache.set(key, value);
    expect(cache.get('a')).to.equal(1); // a is now the most recently used
    cache.set('d', 4);
    expect([...cache.keys()].sort()).to.deep.equal(['a', 'c', 'd']);
    expect(cache.size).to.equal(3);
  });

  it('keeps its other options, such as a time to live', () => {
    let now = 5000; // lru-cache takes a start time of 0 for none
    const cache = lruCache<string, number>(10, { ttl: 1000, ttlResolution: 0, perf: { now: () => now } });
    cache.set('a', 1);
    now = 5999;
    expect(cache.get('a')).to.equal(1);
    now = 6001;
    expect(cache.get('a')).to.equal(undefined);
  });

  it('allocates nothing for the entries it may hold before it holds them', () => {
    const before = process.memoryUsage().arrayBuffers;
    const caches = Array.from({ length: 10 }, () => lruCache<string, number>(1_000_000));
    expect(caches).to.have.length(10);
    // lru-cache's `max: 1_000_000` allocates about 12 MB of typed arrays per cache up front.
    expect(process.memoryUsage().arrayBuffers - before).to.be.below(1_000_000);
  });
});
