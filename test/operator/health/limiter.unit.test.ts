// The limits endpoint checks share: a global cap, and per host a cap and a token bucket, with hosts taken
// round-robin so the busiest host's queue never holds the others back.
import { expect } from 'chai';
import { HostLimiter, LimiterStoppedError, type LimiterSettings } from '../../../operator/src/health/limiter.js';
import { ManualTime } from '../../../testkit/clock.js';

/** A limiter on manual time: start times and spacing are read from its clock, whatever the machine's load. */
function limiterOn(settings: LimiterSettings, onThrottled?: () => void) {
  const time = new ManualTime(0);
  return { time, limiter: new HostLimiter(settings, { scheduler: time, ...(onThrottled && { onThrottled }) }) };
}

/** Runs `count` requests per host, each taking `ms` of manual time, and records concurrency and start times. */
async function load(time: ManualTime, limiter: HostLimiter, hosts: Record<string, number>, ms: number) {
  const inFlight = new Map<string, number>();
  const peak = new Map<string, number>();
  const starts = new Map<string, number[]>();
  let globalPeak = 0;
  let global = 0;
  const tasks = Object.entries(hosts).flatMap(([host, count]) =>
    Array.from({ length: count }, () =>
      limiter.run(host, async () => {
        global++;
        globalPeak = Math.max(globalPeak, global);
        inFlight.set(host, (inFlight.get(host) ?? 0) + 1);
        peak.set(host, Math.max(peak.get(host) ?? 0, inFlight.get(host)!));
        starts.set(host, [...(starts.get(host) ?? []), time.monotonic()]);
        if (ms > 0) await new Promise<void>((resolve) => time.after(ms, resolve));
        inFlight.set(host, inFlight.get(host)! - 1);
        global--;
      }),
    ),
  );
  await time.run(Promise.all(tasks));
  return { peak, starts, globalPeak };
}

describe('operator: endpoint check limits', () => {
  it('holds the global cap and each host at its cap', async () => {
    const { time, limiter } = limiterOn({
      concurrency: 6,
      perHostConcurrency: 2,
      perHostRate: { count: 1000, periodMs: 1000 },
    });
    const { peak, globalPeak } = await load(time, limiter, { a: 20, b: 20, c: 20, d: 20 }, 20);
    expect(globalPeak).to.equal(6);
    for (const host of ['a', 'b', 'c', 'd']) expect(peak.get(host), host).to.equal(2);
  });

  it("spaces a host's requests by its rate: never more than the rate in any one-second window", async () => {
    let throttled = 0;
    const { time, limiter } = limiterOn(
      { concurrency: 50, perHostConcurrency: 10, perHostRate: { count: 10, periodMs: 1000 } },
      () => throttled++,
    );
    const { starts } = await load(time, limiter, { busy: 25 }, 0);
    const times = starts.get('busy')!;
    // One at once, then one every 100 ms, exactly: the 25th at 2.4 s.
    expect(times).to.deep.equal(Array.from({ length: 25 }, (_, i) => i * 100));
    for (let i = 0; i < times.length; i++)
      expect(
        times.filter((t) => t > times[i]! - 1000 && t <= times[i]!).length,
        `window ending at request ${i}`,
      ).to.be.at.most(10);
    expect(throttled).to.equal(24);
  });

  it('lets other hosts through while the busiest waits for its tokens (no head-of-line blocking)', async () => {
    const { time, limiter } = limiterOn({
      concurrency: 2,
      perHostConcurrency: 2,
      perHostRate: { count: 2, periodMs: 1000 },
    });
    const busy = Array.from({ length: 6 }, () => limiter.run('busy', async () => time.monotonic()));
    const others = ['x', 'y', 'z'].map((host) => limiter.run(host, async () => time.monotonic()));
    expect(await time.run(Promise.all(others))).to.deep.equal([0, 0, 0]); // before the busy host's second token
    expect(await time.run(Promise.all(busy))).to.deep.equal([0, 500, 1000, 1500, 2000, 2500]); // six at 2/s
  });

  it('fails queued requests when stopped, and refuses new ones; running ones finish', async () => {
    const { limiter } = limiterOn({
      concurrency: 1,
      perHostConcurrency: 1,
      perHostRate: { count: 100, periodMs: 1000 },
    });
    let finish: () => void = () => {};
    const running = limiter.run('a', async () => {
      await new Promise<void>((resolve) => (finish = resolve));
      return 'done';
    });
    let ended = false;
    void running.finally(() => (ended = true));
    const queued = limiter.run('a', async () => 'never').catch((e: unknown) => e);
    limiter.stop();
    expect(await queued).to.be.instanceOf(LimiterStoppedError);
    expect(await limiter.run('b', async () => 'x').catch((e: unknown) => e)).to.be.instanceOf(LimiterStoppedError);
    expect(ended, 'the running request, before it ends').to.equal(false);
    finish();
    expect(await running).to.equal('done');
  });

  it("passes a request's failure to its caller and frees its slots", async () => {
    const { time, limiter } = limiterOn({
      concurrency: 1,
      perHostConcurrency: 1,
      perHostRate: { count: 100, periodMs: 1000 },
    });
    const failing = limiter.run('a', async () => {
      throw new Error('boom');
    });
    expect(await failing.catch((e: unknown) => (e as Error).message)).to.equal('boom');
    expect(await time.run(limiter.run('a', async () => 'next'))).to.equal('next'); // after its host's next token
    expect(limiter.inFlight).to.equal(0);
  });
});
