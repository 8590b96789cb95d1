// The token bucket replicas share through Redis, against the real redis-server: one atomic script, timed by
// the Redis server's clock, and a 503 (never a guess) when Redis errs or does not answer in time.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { connectRedis } from '#core/infra/redis.js';
import { AppError } from '../../../../api/src/shared/http/errors.js';
import { RedisRateLimiter, type RatePolicy } from '../../../../api/src/shared/infra/rate-limit.js';
import { testRedisUrl } from '../../../../testkit/services.js';
import { freePort } from '../../../../testkit/machine.js';

// A day-long window: a token every 2.4 h, so no refill worth counting happens while a test runs.
const DAILY: RatePolicy = { capacity: 10, windowMs: 86_400_000, name: 'initiate' };
const PER_TOKEN = DAILY.windowMs / DAILY.capacity;

async function expectUnavailable(take: Promise<unknown>): Promise<void> {
  const error = await take.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'take() resolved').to.be.instanceOf(AppError);
  expect(error).to.include({ status: 503, code: 'SERVICE_UNAVAILABLE', retryable: true });
  expect((error as AppError).headers).to.have.property('Retry-After');
}

describe('infra: RedisRateLimiter', () => {
  let replicaA: Redis;
  let replicaB: Redis;
  let prefix: string;

  beforeEach(async () => {
    [replicaA, replicaB] = await Promise.all([connectRedis(testRedisUrl()), connectRedis(testRedisUrl())]);
    prefix = `portico:rl:test-${randomUUID()}:`;
  });

  afterEach(async () => {
    const keys = await replicaA.keys(`${prefix}*`);
    if (keys.length > 0) await replicaA.del(...keys);
    replicaA.disconnect();
    replicaB.disconnect();
  });

  async function onlyKey(): Promise<string> {
    const keys = await replicaA.keys(`${prefix}*`);
    expect(keys).to.have.length(1);
    return keys[0]!;
  }

  it('lets exactly capacity of many concurrent takes through when two replicas share the bucket', async () => {
    const limiters = [
      new RedisRateLimiter(replicaA, DAILY, { prefix }),
      new RedisRateLimiter(replicaB, DAILY, { prefix }),
    ];
    const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => limiters[i % 2]!.take('acct-1:user-1')));
    const allowed = decisions.filter((d) => d.allowed);
    expect(allowed).to.have.length(10);
    expect(allowed.map((d) => d.remaining).sort((a, b) => a - b)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const refused of decisions.filter((d) => !d.allowed)) {
      expect(refused.remaining).to.equal(0);
      expect(refused.retryAfterMs).to.be.within(1, PER_TOKEN);
    }
    expect(await limiters[0]!.take('acct-2:user-1')).to.include({ allowed: true, remaining: 9 });
  });

  it('looks at a bucket without taking from it or storing one (peek)', async () => {
    const limiter = new RedisRateLimiter(replicaA, DAILY, { prefix });
    expect(await limiter.peek('acct-peek')).to.include({ allowed: true, remaining: 10 });
    expect(await replicaA.keys(`${prefix}*`)).to.deep.equal([]);
    for (let i = 0; i < 10; i++) await limiter.take('acct-peek');
    expect(await limiter.peek('acct-peek')).to.include({ allowed: false, remaining: 0 });
    expect(await limiter.peek('acct-peek')).to.include({ allowed: false, remaining: 0 });
    await replicaA.del(await onlyKey());
  });

  it('names a bucket by a digest of bounded length, and lets it expire when it would be full again', async () => {
    const limiter = new RedisRateLimiter(replicaA, DAILY, { prefix });
    const decision = await limiter.take(`acct-1:${'u'.repeat(128)}`);
    expect(decision).to.deep.equal({ allowed: true, remaining: 9, resetMs: PER_TOKEN, retryAfterMs: 0 });
    const key = await onlyKey();
    expect(key).to.match(/^portico:rl:test-[0-9a-f-]+:[A-Za-z0-9_-]{43}$/);
    const ttl = await replicaA.pttl(key);
    expect(ttl).to.be.within(1, PER_TOKEN);
    expect(ttl).to.be.greaterThan(PER_TOKEN - 60_000);
  });

  it('uses portico:rl:<policy name>: as the default prefix', async () => {
    const user = `user-${randomUUID()}`;
    const before = new Set(await replicaA.keys('portico:rl:initiate:*'));
    await new RedisRateLimiter(replicaA, DAILY).take(`acct-1:${user}`);
    const added = (await replicaA.keys('portico:rl:initiate:*')).filter((k) => !before.has(k));
    expect(added).to.have.length(1);
    await replicaA.del(...added);
  });

  it('refills by the Redis server clock, as the in-process bucket does', async () => {
    const limiter = new RedisRateLimiter(replicaA, DAILY, { prefix });
    for (let i = 0; i < 10; i++) await limiter.take('k');
    const refused = await limiter.take('k');
    expect(refused).to.include({ allowed: false, remaining: 0 });
    expect(refused.resetMs).to.be.closeTo(DAILY.windowMs, 60_000);
    expect(refused.retryAfterMs).to.be.closeTo(PER_TOKEN, 60_000);

    // Move the bucket's last take one and a half tokens' worth into the past, by the server's clock.
    const [seconds, micros] = await replicaA.time();
    const now = Number(seconds) * 1000 + Number(micros) / 1000;
    await replicaA.hset(await onlyKey(), 'tokens', '0', 'at', String(now - 1.5 * PER_TOKEN));
    const taken = await limiter.take('k');
    expect(taken).to.include({ allowed: true, remaining: 0 });
    expect(taken.resetMs).to.be.closeTo(9.5 * PER_TOKEN, 60_000);
    const again = await limiter.take('k');
    expect(again).to.include({ allowed: false, remaining: 0 });
    expect(again.retryAfterMs).to.be.closeTo(0.5 * PER_TOKEN, 60_000);
  });

  it('loads the script again when Redis has lost it (NOSCRIPT)', async () => {
    const noscriptErrors = async () =>
      Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(await replicaB.info('errorstats'))?.[1] ?? 0);
    const limiter = new RedisRateLimiter(replicaA, DAILY, { prefix });
    expect(await limiter.take('k')).to.include({ allowed: true, remaining: 9 });
    expect(await limiter.take('k')).to.include({ allowed: true, remaining: 8 }); // by EVALSHA now
    await replicaB.script('FLUSH');
    const before = await noscriptErrors();
    expect(await limiter.take('k')).to.include({ allowed: true, remaining: 7 });
    expect(await noscriptErrors(), 'the EVALSHA was refused and sent again as EVAL').to.equal(before + 1);
    expect(await limiter.take('k')).to.include({ allowed: true, remaining: 6 });
    expect(await noscriptErrors()).to.equal(before + 1);
  });

  it('answers 503 when Redis does not answer within the deadline', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket); // accepts, reads, never replies
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const client = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: true,
      enableReadyCheck: false,
      disableClientInfo: true,
      maxRetriesPerRequest: 1,
    });
    client.on('error', () => {});
    try {
      await client.connect();
      await expectUnavailable(new RedisRateLimiter(client, DAILY, { timeoutMs: 100 }).take('k'));
    } finally {
      client.disconnect();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('answers 503 when Redis cannot be reached', async () => {
    const client = new Redis({
      host: '127.0.0.1',
      port: await freePort(),
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => {});
    try {
      await expectUnavailable(new RedisRateLimiter(client, DAILY).take('k'));
    } finally {
      client.disconnect();
    }
  });

  it('answers 503 when Redis refuses the command', async () => {
    const limiter = new RedisRateLimiter(replicaA, DAILY, { prefix });
    await limiter.take('k');
    await replicaA.set(await onlyKey(), 'not a bucket'); // WRONGTYPE for the script's HMGET
    await expectUnavailable(limiter.take('k'));
  });
});
