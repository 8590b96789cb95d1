import { expect } from 'chai';
import { setCondition, type Condition } from '../../../operator/src/controller/conditions.js';
import { WorkQueue } from '../../../operator/src/controller/queue.js';
import { parseDuration } from '../../../operator/src/shared/catalog-spec.js';

describe('operator: work queue', () => {
  it('hands out a key once however often it was added, in order', async () => {
    const queue = new WorkQueue();
    for (const key of ['a', 'b', 'a', 'c', 'b']) queue.add(key);
    expect(queue.length).to.equal(3);
    expect([await queue.get(), await queue.get(), await queue.get()]).to.deep.equal(['a', 'b', 'c']);
  });

  it('never gives a key to two workers: a change during processing requeues it afterwards', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    const key = await queue.get();
    queue.add('a');
    expect(queue.length).to.equal(0);
    queue.done(key!);
    expect(queue.length).to.equal(1);
    expect(await queue.get()).to.equal('a');
  });

  it('backs off exponentially per key and starts over after forget', () => {
    const queue = new WorkQueue({ baseDelayMs: 100, maxDelayMs: 1000 });
    expect([
      queue.addRateLimited('a'),
      queue.addRateLimited('a'),
      queue.addRateLimited('a'),
      queue.addRateLimited('b'),
    ]).to.deep.equal([100, 200, 400, 100]);
    for (let i = 0; i < 5; i++) queue.addRateLimited('a');
    expect(queue.addRateLimited('a')).to.equal(1000);
    queue.forget('a');
    expect(queue.addRateLimited('a')).to.equal(100);
    queue.shutDown();
  });

  it('delivers a delayed key when its time comes, not before', async () => {
    const queue = new WorkQueue();
    queue.addAfter('later', 50);
    queue.add('now');
    expect(await queue.get()).to.equal('now'); // the delayed key is not handed out early…
    queue.done('now');
    expect(await queue.get()).to.equal('later'); // …but it does come
  });

  it('caps delays at what a timer can hold, instead of firing at once (720h intervals)', async () => {
    const queue = new WorkQueue();
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    queue.addAfter('monthly', 720 * 3_600_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    process.off('warning', onWarning);
    expect(queue.length).to.equal(0);
    expect(warnings).to.not.include('TimeoutOverflowWarning');
    queue.shutDown();
  });

  it('releases waiting workers on shutdown', async () => {
    const queue = new WorkQueue();
    const waiting = queue.get();
    queue.shutDown();
    expect(await waiting).to.equal(undefined);
  });
});

describe('operator: conditions and durations', () => {
  const t1 = new Date('2026-11-22T10:00:00.000Z');
  const t2 = new Date('2026-11-22T11:00:00.000Z');

  it('moves lastTransitionTime only when the status flips', () => {
    let conditions: Condition[] = setCondition(
      [],
      { type: 'Ready', status: 'False', reason: 'Publishing', message: 'a', observedGeneration: 1 },
      t1,
    );
    conditions = setCondition(
      conditions,
      { type: 'Ready', status: 'False', reason: 'ReconcileFailed', message: 'b', observedGeneration: 2 },
      t2,
    );
    expect(conditions[0]).to.include({
      reason: 'ReconcileFailed',
      message: 'b',
      observedGeneration: 2,
      lastTransitionTime: t1.toISOString(),
    });
    conditions = setCondition(
      conditions,
      { type: 'Ready', status: 'True', reason: 'Published', message: 'c', observedGeneration: 2 },
      t2,
    );
    expect(conditions[0]!.lastTransitionTime).to.equal(t2.toISOString());
  });

  it('keeps one condition per type, sorted', () => {
    let conditions: Condition[] = [];
    for (const type of ['Stalled', 'Ready', 'Reconciling', 'Ready'] as const)
      conditions = setCondition(
        conditions,
        { type, status: 'True', reason: 'X', message: '', observedGeneration: 1 },
        t1,
      );
    expect(conditions.map((c) => c.type)).to.deep.equal(['Ready', 'Reconciling', 'Stalled']);
  });

  it('reads refresh intervals', () => {
    expect(parseDuration('24h')).to.equal(86_400_000);
    expect(parseDuration('1h30m')).to.equal(5_400_000);
    expect(parseDuration('45s')).to.equal(45_000);
  });
});
