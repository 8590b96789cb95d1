// Generation tokens, in one process and shared through the real redis-server: a key keeps its token until
// bumped, a bump gives a new one that every reader sees at once, a lapsed or evicted key reads as a new token
// (never as an old one), and `changing` bumps before and after a change, also one that fails.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { connectRedis } from '../../../core/src/infra/redis.js';
import { changing, LocalGenerations, RedisGenerations, type Generations } from '../../../api/src/infra/generations.js';
import { testRedisUrl } from '../../support/services.js';

describe('generation tokens', () => {
  const kinds: [string, () => Promise<{ a: Generations; b: Generations; close: () => Promise<void> }>][] = [
    ['in one process', async () => {
      const local = new LocalGenerations();
      return { a: local, b: local, close: async () => {} };
    }],
    ['shared through Redis', async () => {
      const [one, two] = [await connectRedis(testRedisUrl()), await connectRedis(testRedisUrl())];
      return { a: new RedisGenerations(one), b: new RedisGenerations(two), close: async () => void (await Promise.all([one.quit(), two.quit()])) };
    }],
  ];
  for (const [name, make] of kinds) {
    it(`${name}: a token stands until a bump, which every reader sees at once`, async () => {
      const { a, b, close } = await make();
      const key = `conn:${randomUUID()}`;
      const [first] = await a.read([key]);
      expect((await b.read([key]))[0]).to.equal(first);
      await a.bump([key]);
      const [second] = await b.read([key]);
      expect(second).to.not.equal(first);
      expect(await a.read([key, `app:${randomUUID()}`])).to.have.length(2).and.to.include(second);
      await close();
    });

    it(`${name}: changing() bumps before and after the change, also a failed one`, async () => {
      const { a, close } = await make();
      const key = `obs:${randomUUID()}`;
      const [before] = await a.read([key]);
      let during = '';
      await changing(a, [key], async () => void (during = (await a.read([key]))[0]!));
      const [after] = await a.read([key]);
      expect(new Set([before, during, after]).size).to.equal(3);
      await changing(a, [key], async () => Promise.reject(new Error('ambiguous write'))).catch(() => {});
      expect((await a.read([key]))[0]).to.not.equal(after);
      await close();
    });
  }

  it('shared through Redis: a token that lapsed reads as a new one', async () => {
    const redis = await connectRedis(testRedisUrl());
    const generations = new RedisGenerations(redis);
    const key = `user:${randomUUID()}`;
    const [first] = await generations.read([key]);
    await redis.del(`portico:gen:${key}`);
    expect((await generations.read([key]))[0]).to.be.a('string').and.not.equal(first);
    await redis.quit();
  });
});
