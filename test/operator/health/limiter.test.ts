// The limits endpoint checks share: a global cap, and per host a cap and a token bucket, with hosts taken
// round-robin so the busiest host's queue never holds the others back.
import { expect } from 'chai';
import { HostLimiter, LimiterStoppedError } from '../../../operator/src/health/limiter.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `count` requests per host, each taking `ms`, and records concurrency and start times. */
async function load(limiter: HostLimiter, hosts: Record<string, number>, ms: number) {
  const inFlight = new Map<string, number>();
  const peak = new Map<string, number>();
  const starts = new Map<string, number[]>();
  let globalPeak = 0;
  let global = 0;
  const started = performance.now();
  const tasks = Object.entries(hosts).flatMap(([host, count]) =>
    Array.from({ length: count }, () =>
      limiter.run(host, async () => {
        global++;
        globalPeak = Math.max(globalPeak, global);
        inFlight.set(host, (inFlight.get(host) ?? 0) + 1);
        peak.set(host, Math.max(peak.get(host) ?? 0, inFlight.get(host)!));
        starts.set(host, [...(starts.get(host) ?? []), performance.now() - started]);
        await sleep(ms);
        inFlight.set(host, inFlight.get(host)! - 1);
        global--;
      }),
    ),
  );
  await Promise.all(tasks);
  return { peak, starts, globalPeak, seconds: (performance.now() - started) / 1000 };
}

describe('operator: endpoint check limits', () => {
  it('holds the global cap and each host at its cap', async () => {
    const limiter = new HostLimiter({ concurrency: 6, perHostConcurrency: 2, perHostRate: { count: 1000, periodMs: 1000 } });
    const { peak, globalPeak } = await load(limiter, { a: 20, b: 20, c: 20, d: 20 }, 20);
    expect(globalPeak).to.equal(6);
    for (const host of ['a', 'b', 'c', 'd']) expect(peak.get(host), host).to.equal(2);
  });

  it("spaces a host's requests by its rate: never more than the rate in any one-second window", async () => {
    const throttled: number[] = [];
    const limiter = new HostLimiter({ concurrency: 50, perHostConcurrency: 10, perHostRate: { count: 10, periodMs: 1000 } }, { onThrottled: () => throttled.push(1) });
    const { starts } = await load(limiter, { busy: 25 }, 1);
    const times = starts.get('busy')!;
    // One at once, then one every 100 ms: the 25th at about 2.4 s.
    expect(times.filter((t) => t < 50)).to.have.length(1);
    expect(times[24]!).to.be.within(2350, 2800);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!, `gap before request ${i}`).to.be.at.least(99);
    for (let i = 0; i < times.length; i++) expect(times.filter((t) => t > times[i]! - 1000 && t <= times[i]!).length, `window ending at request ${i}`).to.be.at.most(10);
    expect(throttled.length).to.equal(24);
  });

  it('lets other hosts through while the busiest waits for its tokens (no head-of-line blocking)', async () => {
    const limiter = new HostLimiter({ concurrency: 2, perHostConcurrency: 2, perHostRate: { count: 2, periodMs: 1000 } });
    const started = performance.now();
    const busy = Array.from({ length: 6 }, () => limiter.run('busy', async () => performance.now() - started));
    const others = await Promise.all(['x', 'y', 'z'].map((host) => limiter.run(host, async () => performance.now() - started)));
    for (const at of others) expect(at).to.be.below(100);
    expect(Math.max(...(await Promise.all(busy)))).to.be.above(2400); // six at 2/s: the last at 2.5 s
  });

  it('fails queued requests when stopped, and refuses new ones; running ones finish', async () => {
    const limiter = new HostLimiter({ concurrency: 1, perHostConcurrency: 1, perHostRate: { count: 100, periodMs: 1000 } });
    const running = limiter.run('a', async () => {
      await sleep(50);
      return 'done';
    });
    const queued = limiter.run('a', async () => 'never').catch((e: unknown) => e);
    limiter.stop();
    expect(await running).to.equal('done');
    expect(await queued).to.be.instanceOf(LimiterStoppedError);
    expect(await limiter.run('b', async () => 'x').catch((e: unknown) => e)).to.be.instanceOf(LimiterStoppedError);
  });

  it("passes a request's failure to its caller and frees its slots", async () => {
    const limiter = new HostLimiter({ concurrency: 1, perHostConcurrency: 1, perHostRate: { count: 100, periodMs: 1000 } });
    const failing = limiter.run('a', async () => {
      throw new Error('boom');
    });
    expect(await failing.catch((e: unknown) => (e as Error).message)).to.equal('boom');
    expect(await limiter.run('a', async () => 'next')).to.equal('next');
    expect(limiter.inFlight).to.equal(0);
  });
});
