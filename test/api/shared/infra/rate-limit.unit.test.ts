// The token bucket in process (time from an injected clock), the policy syntax, and the RateLimit fields a
// client reads. The Redis bucket, shared by replicas, is in rate-limit-redis.test.ts.
import { expect } from 'chai';
import {
  MemoryRateLimiter,
  parseRatePolicy,
  rateLimitFields,
  rateLimitHeaders,
  type RateDecision,
  type RatePolicy,
} from '../../../../api/src/shared/infra/rate-limit.js';
import { ManualClock } from '../../../../testkit/clock.js';

const INITIATE: RatePolicy = { capacity: 10, windowMs: 60_000, name: 'initiate' }; // a token every 6 s

async function takeMany(limiter: MemoryRateLimiter, key: string, count: number): Promise<RateDecision[]> {
  const decisions: RateDecision[] = [];
  for (let i = 0; i < count; i++) decisions.push(await limiter.take(key));
  return decisions;
}

describe('infra: parseRatePolicy', () => {
  it('reads <requests>/<window> with the usual duration units', () => {
    expect(parseRatePolicy('10/60s', 'initiate')).to.deep.equal({ capacity: 10, windowMs: 60_000, name: 'initiate' });
    expect(parseRatePolicy('5/1m', 'x')).to.include({ capacity: 5, windowMs: 60_000 });
    expect(parseRatePolicy('100/1h', 'x')).to.include({ capacity: 100, windowMs: 3_600_000 });
    expect(parseRatePolicy(' 1/1s ', 'x')).to.include({ capacity: 1, windowMs: 1_000 });
    expect(parseRatePolicy('10000/24h', 'x')).to.include({ capacity: 10_000, windowMs: 86_400_000 });
    expect(parseRatePolicy('2/2000ms', 'x')).to.include({ capacity: 2, windowMs: 2_000 });
  });

  it('refuses anything else, and capacities or windows out of range', () => {
    for (const text of [
      '',
      '10',
      '10/',
      '/60s',
      '10/60',
      '10 / 60s',
      '-1/60s',
      '1.5/60s',
      '0/60s',
      '10001/1h',
      '10/0s',
      '10/999ms',
      '10/1500ms',
      '10/24h1s',
      '10/2d',
      'ten/1m',
      '10/60S',
    ]) {
      expect(parseRatePolicy(text, 'x'), JSON.stringify(text)).to.equal(undefined);
    }
  });
});

describe('infra: MemoryRateLimiter', () => {
  it('lets a full bucket spend its capacity at once, counting down, then refuses', async () => {
    const limiter = new MemoryRateLimiter(INITIATE, new ManualClock());
    const decisions = await takeMany(limiter, 'acct:user', 11);
    expect(decisions.slice(0, 10).map((d) => [d.allowed, d.remaining, d.retryAfterMs])).to.deep.equal(
      [9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map((r) => [true, r, 0]),
    );
    expect(decisions.slice(0, 10).map((d) => d.resetMs)).to.deep.equal(
      [6, 12, 18, 24, 30, 36, 42, 48, 54, 60].map((s) => s * 1000),
    );
    expect(decisions[10]).to.deep.equal({ allowed: false, remaining: 0, resetMs: 60_000, retryAfterMs: 6_000 });
  });

  it('refills continuously at capacity per window: a token every 6 s for 10/60s', async () => {
    const clock = new ManualClock();
    const limiter = new MemoryRateLimiter(INITIATE, clock);
    await takeMany(limiter, 'k', 10);
    clock.advance(2_500);
    expect(await limiter.take('k')).to.deep.equal({
      allowed: false,
      remaining: 0,
      resetMs: 57_500,
      retryAfterMs: 3_500,
    });
    clock.advance(3_499);
    expect((await limiter.take('k')).retryAfterMs).to.equal(1);
    clock.advance(1);
    expect(await limiter.take('k')).to.deep.equal({ allowed: true, remaining: 0, resetMs: 60_000, retryAfterMs: 0 });
    expect((await limiter.take('k')).allowed).to.equal(false);
    clock.advance(15_000); // two and a half tokens
    expect(
      (await takeMany(limiter, 'k', 3)).map((d) => [d.allowed, d.remaining, d.resetMs, d.retryAfterMs]),
    ).to.deep.equal([
      [true, 1, 51_000, 0],
      [true, 0, 57_000, 0],
      [false, 0, 57_000, 3_000],
    ]);
  });

  it('never holds more than its capacity, however long the bucket rests', async () => {
    const clock = new ManualClock();
    const limiter = new MemoryRateLimiter(INITIATE, clock);
    await takeMany(limiter, 'k', 3);
    clock.advance(10 * 60_000);
    const decisions = await takeMany(limiter, 'k', 11);
    expect(decisions.filter((d) => d.allowed)).to.have.length(10);
    expect(decisions[0]).to.include({ remaining: 9, resetMs: 6_000 });
  });

  it('reports the time until the bucket is full again, which a partial refill shortens', async () => {
    const clock = new ManualClock();
    const limiter = new MemoryRateLimiter(INITIATE, clock);
    expect((await takeMany(limiter, 'k', 3)).at(-1)).to.include({ remaining: 7, resetMs: 18_000 });
    clock.advance(5_000); // 7 + 5/6 tokens, then one taken
    expect(await limiter.take('k')).to.deep.equal({ allowed: true, remaining: 6, resetMs: 19_000, retryAfterMs: 0 });
  });

  it('looks at a bucket without taking from it (peek)', async () => {
    const limiter = new MemoryRateLimiter(INITIATE, new ManualClock());
    expect(await limiter.peek('k')).to.include({ allowed: true, remaining: 10 });
    await takeMany(limiter, 'k', 10);
    expect(await limiter.peek('k')).to.deep.equal({
      allowed: false,
      remaining: 0,
      resetMs: 60_000,
      retryAfterMs: 6_000,
    });
    expect(await limiter.peek('k')).to.deep.equal({
      allowed: false,
      remaining: 0,
      resetMs: 60_000,
      retryAfterMs: 6_000,
    });
  });

  it('keeps one bucket per key', async () => {
    const limiter = new MemoryRateLimiter(INITIATE, new ManualClock());
    await takeMany(limiter, 'acct-1:user', 10);
    expect((await limiter.take('acct-1:user')).allowed).to.equal(false);
    expect(await limiter.take('acct-2:user')).to.include({ allowed: true, remaining: 9 });
    expect(await limiter.take('acct-1:other')).to.include({ allowed: true, remaining: 9 });
  });

  it('gives nothing back when the clock steps backwards', async () => {
    const clock = new ManualClock();
    const limiter = new MemoryRateLimiter(INITIATE, clock);
    await takeMany(limiter, 'k', 10);
    clock.advance(-30_000);
    expect(await limiter.take('k')).to.deep.equal({
      allowed: false,
      remaining: 0,
      resetMs: 90_000,
      retryAfterMs: 36_000,
    });
    clock.advance(36_000);
    expect(await limiter.take('k')).to.include({ allowed: true, remaining: 0 });
  });

  it('forgets buckets that are full again, so memory follows the partitions active within a window', async () => {
    const clock = new ManualClock();
    const limiter = new MemoryRateLimiter(INITIATE, clock);
    for (let i = 0; i < 1000; i++) await limiter.take(`user-${i}`);
    expect(limiter.size).to.equal(1000);
    clock.advance(5_999); // the token each took is back after 6 s
    await limiter.take('late');
    expect(limiter.size).to.equal(1001);
    clock.advance(1);
    await limiter.take('later');
    expect(limiter.size).to.equal(2); // late and later; the thousand were full again
    expect(await limiter.take('user-0')).to.include({ remaining: 9 });
  });

  it('holds at most maxKeys buckets, dropping the least recently used first', async () => {
    const limiter = new MemoryRateLimiter(INITIATE, new ManualClock(), 3);
    for (let i = 0; i < 50; i++) {
      await limiter.take(`user-${i}`);
      expect(limiter.size).to.be.at.most(3);
    }
    await limiter.take('user-47'); // now the most recently used
    await limiter.take('user-50'); // drops user-48, the least recently used
    expect(await limiter.take('user-47')).to.include({ remaining: 7 });
    expect(await limiter.take('user-48')).to.include({ remaining: 9 });
    expect(limiter.size).to.equal(3);
    expect(() => new MemoryRateLimiter(INITIATE, new ManualClock(), 0)).to.throw(RangeError);
  });
});

describe('infra: rateLimitHeaders (draft-ietf-httpapi-ratelimit-headers-10)', () => {
  it('states the policy and what remains, with t until the next token, on an allowed request', async () => {
    const clock = new ManualClock();
    const limiter = new MemoryRateLimiter(INITIATE, clock);
    expect(rateLimitHeaders(INITIATE, await limiter.take('k'))).to.deep.equal({
      'RateLimit-Policy': '"initiate";q=10;w=60',
      RateLimit: '"initiate";r=9;t=6',
    });
    await takeMany(limiter, 'k', 5);
    clock.advance(2_500); // 4 + 5/12 tokens, then one taken: the 4th is back in 3.5 s
    const decision = await limiter.take('k');
    expect(decision).to.include({ remaining: 3, resetMs: 39_500 });
    expect(rateLimitHeaders(INITIATE, decision)).to.deep.equal({
      'RateLimit-Policy': '"initiate";q=10;w=60',
      RateLimit: '"initiate";r=3;t=4',
    });
  });

  it('adds Retry-After in whole seconds, rounded up and at least 1, equal to t, on a refusal', async () => {
    const clock = new ManualClock();
    const limiter = new MemoryRateLimiter(INITIATE, clock);
    await takeMany(limiter, 'k', 10);
    expect(rateLimitHeaders(INITIATE, await limiter.take('k'))).to.deep.equal({
      'RateLimit-Policy': '"initiate";q=10;w=60',
      RateLimit: '"initiate";r=0;t=6',
      'Retry-After': '6',
    });
    clock.advance(5_999);
    expect(rateLimitHeaders(INITIATE, await limiter.take('k'))).to.include({
      RateLimit: '"initiate";r=0;t=1',
      'Retry-After': '1',
    });
    const hourly: RatePolicy = { capacity: 1, windowMs: 3_600_000, name: 'hourly' };
    expect(
      rateLimitHeaders(hourly, { allowed: false, remaining: 0, resetMs: 3_599_001, retryAfterMs: 3_599_001 }),
    ).to.deep.equal({
      'RateLimit-Policy': '"hourly";q=1;w=3600',
      RateLimit: '"hourly";r=0;t=3600',
      'Retry-After': '3600',
    });
  });

  it('omits t when the bucket is full, and quotes the policy name as a structured-field string', () => {
    const odd: RatePolicy = { capacity: 5, windowMs: 1_000, name: 'a "b" \\c' };
    expect(rateLimitHeaders(odd, { allowed: true, remaining: 5, resetMs: 0, retryAfterMs: 0 })).to.deep.equal({
      'RateLimit-Policy': '"a \\"b\\" \\\\c";q=5;w=1',
      RateLimit: '"a \\"b\\" \\\\c";r=5',
    });
  });
});

describe('infra: rateLimitFields (several policies)', () => {
  it('lists one member per policy, in order, and waits for the longest refusal', () => {
    const user: RatePolicy = { capacity: 10, windowMs: 60_000, name: 'initiate' };
    const key: RatePolicy = { capacity: 60, windowMs: 60_000, name: 'initiate-key' };
    const fields = rateLimitFields([
      { policy: user, decision: { allowed: false, remaining: 0, resetMs: 60_000, retryAfterMs: 6_000 } },
      { policy: key, decision: { allowed: false, remaining: 0, resetMs: 60_000, retryAfterMs: 1_000 } },
    ]);
    expect(fields).to.deep.equal({
      'RateLimit-Policy': '"initiate";q=10;w=60, "initiate-key";q=60;w=60',
      RateLimit: '"initiate";r=0;t=6, "initiate-key";r=0;t=1',
      'Retry-After': '6',
    });
    expect(
      rateLimitFields([{ policy: key, decision: { allowed: true, remaining: 60, resetMs: 0, retryAfterMs: 0 } }]),
    ).to.deep.equal({ 'RateLimit-Policy': '"initiate-key";q=60;w=60', RateLimit: '"initiate-key";r=60' });
  });
});
