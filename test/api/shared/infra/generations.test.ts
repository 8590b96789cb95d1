// Generation tokens, in one process and shared through the real redis-server: a key keeps its token until
// bumped, a bump gives a new one that every reader sees at once, a lapsed or evicted key reads as a new token
// (never as an old one), and `changing` bumps before and after a change, also one that fails.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { connectRedis } from '#core/infra/redis.js';
import {
  changing,
  LocalGenerations,
  RedisGenerations,
  type Generations,
} from '../../../../api/src/shared/infra/generations.js';
import { testRedisUrl } from '../../../../testkit/services.js';

/** Tokens in memory whose bumps fail while `failing` is set. */
class Flaky extends LocalGenerations {
  failing = false;
  late: string[][] = [];
  override async bump(keys: string[]): Promise<void> {
    if (this.failing) throw new Error('redis is away');
    return super.bump(keys);
  }
  override bumpLater(keys: string[]): void {
    this.late.push(keys);
  }
}

describe('generation tokens', () => {
  const kinds: [string, () => Promise<{ a: Generations; b: Generations; close: () => Promise<void> }>][] = [
    [
      'in one process',
      async () => {
        const local = new LocalGenerations();
        return { a: local, b: local, close: async () => {} };
      },
    ],
    [
      'shared through Redis',
      async () => {
        const [one, two] = [await connectRedis(testRedisUrl()), await connectRedis(testRedisUrl())];
        return {
          a: new RedisGenerations(one),
          b: new RedisGenerations(two),
          close: async () => void (await Promise.all([one.quit(), two.quit()])),
        };
      },
    ],
  ];
  for (const [name, make] of kinds) {
    it(`${name}: a token stands until a bump, which every reader sees at once`, async () => {
      const { a, b, close } = await make();
      const key = `conn:${randomUUID()}`;
      expect(await a.read([key])).to.deep.equal([undefined]); // reading never writes
      const [first] = await a.ensure([key]);
      expect((await b.read([key]))[0]).to.equal(first);
      expect(await b.ensure([key])).to.deep.equal([first]);
      await a.bump([key]);
      const [second] = await b.read([key]);
      expect(second).to.not.equal(first);
      expect(await a.ensure([key, `app:${randomUUID()}`]))
        .to.have.length(2)
        .and.to.include(second);
      await close();
    });

    it(`${name}: changing() bumps before and after the change, also a failed one`, async () => {
      const { a, close } = await make();
      const key = `obs:${randomUUID()}`;
      const [before] = await a.ensure([key]);
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
    const [first] = await generations.ensure([key]);
    await redis.del(`portico:gen:${key}`);
    expect(await generations.read([key])).to.deep.equal([undefined]);
    expect((await generations.ensure([key]))[0])
      .to.be.a('string')
      .and.not.equal(first);
    await redis.quit();
  });

  it('changing(): a change that succeeded is reported as such though the second bump fails (retried later); a failed change keeps its own error', async () => {
    const flaky = new Flaky();
    const key = `conn:${randomUUID()}`;
    expect(await changing(flaky, [key], async () => ((flaky.failing = true), 'written'))).to.equal('written');
    expect(flaky.late).to.deep.equal([[key]]);
    flaky.failing = false;
    const failure = await changing(flaky, [key], async () => {
      flaky.failing = true;
      throw new Error('the write failed');
    }).catch((error: Error) => error);
    expect(failure.message).to.equal('the write failed');
    expect(flaky.late).to.have.length(2);
    // A first bump that fails is the answer: nothing was written.
    let ran = false;
    expect(await changing(flaky, [key], async () => void (ran = true)).catch((error: Error) => error.message)).to.equal(
      'redis is away',
    );
    expect(ran).to.equal(false);
  });
});
