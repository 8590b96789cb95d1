// AccessLogWriter's group commit (docs/api.md, "The access log"): one append at a time; the entries recorded while it
// is open go together into the next; a read's promise settles only when its own append does, and an append that fails
// rejects exactly its batch.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { FakeAccessLogStore } from '../../../../api/src/features/access-log/fake-store.js';
import type { AccessEntry } from '../../../../api/src/features/access-log/store.js';
import { AccessLogWriter, MAX_QUEUED } from '../../../../api/src/features/access-log/writer.js';
import { AppError } from '../../../../api/src/shared/http/errors.js';
import type { ReadEntry } from '../../../../api/src/features/clinical/index.js';
import { ManualClock } from '../../../../testkit/clock.js';

/** A fake store whose appends wait until the test releases (or fails) them, one by one, in order. */
class HeldStore extends FakeAccessLogStore {
  readonly held: { entries: readonly AccessEntry[]; release: () => void; fail: (error: Error) => void }[] = [];
  /** How many appends were at work at once, at most. */
  mostAtOnce = 0;
  private open = 0;

  override append(entries: readonly AccessEntry[]): Promise<void> {
    this.mostAtOnce = Math.max(this.mostAtOnce, ++this.open);
    return new Promise<void>((resolve, reject) => {
      this.held.push({
        entries: [...entries],
        release: () => {
          this.open--;
          resolve(super.append(entries));
        },
        fail: (error) => {
          this.open--;
          reject(error);
        },
      });
    });
  }
}

const read = (requestId: string): ReadEntry => ({
  accountId: 'account-1',
  appId: 'app-1',
  appUserId: 'user-1',
  connectionId: randomUUID(),
  brandId: 'brand-1',
  interaction: 'search',
  resourceType: 'Observation',
  count: 3,
  requestId,
  keyId: 'key-1',
});

/** Lets every promise callback queued so far run: what settles without I/O has settled after it. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A promise's state, without waiting for it. */
function watch(promise: Promise<void>) {
  const state = { settled: false as false | 'resolved' | 'rejected', error: undefined as unknown };
  promise.then(
    () => (state.settled = 'resolved'),
    (error: unknown) => ((state.settled = 'rejected'), (state.error = error)),
  );
  return state;
}

describe('access log: the writer', () => {
  it('keeps one append at work and puts everything recorded meanwhile into the next, single append', async () => {
    const store = new HeldStore();
    const writer = new AccessLogWriter(store, new ManualClock(new Date('2026-12-01T00:00:00Z')));
    const first = watch(writer.record(read('r1')));
    await settle();
    expect(store.held).to.have.length(1);
    const later = ['r2', 'r3', 'r4'].map((id) => watch(writer.record(read(id))));
    await settle();
    expect(store.held, 'no second append while the first is open').to.have.length(1);

    store.held[0]!.release();
    await settle();
    expect(first.settled).to.equal('resolved');
    expect(later.map((s) => s.settled)).to.deep.equal([false, false, false]);
    expect(store.held).to.have.length(2);
    expect(store.held[1]!.entries.map((e) => e.requestId)).to.deep.equal(['r2', 'r3', 'r4']);

    store.held[1]!.release();
    await writer.flushed();
    await settle();
    expect(later.map((s) => s.settled)).to.deep.equal(['resolved', 'resolved', 'resolved']);
    expect(store.mostAtOnce).to.equal(1);
    expect(store.entries.map((e) => e.requestId)).to.deep.equal(['r1', 'r2', 'r3', 'r4']);
  });

  it('does not resolve a read before its append is acknowledged', async () => {
    const store = new HeldStore();
    const writer = new AccessLogWriter(store, new ManualClock());
    const only = watch(writer.record(read('r1')));
    for (let i = 0; i < 5; i++) await settle();
    expect(only.settled).to.equal(false);
    expect(store.entries).to.deep.equal([]);
    store.held[0]!.release();
    await settle();
    expect(only.settled).to.equal('resolved');
    expect(store.entries).to.have.length(1);
  });

  it('rejects exactly the failed batch with the database’s error, and records the next reads', async () => {
    const store = new HeldStore();
    const writer = new AccessLogWriter(store, new ManualClock());
    const first = watch(writer.record(read('r1')));
    await settle();
    const batch = ['r2', 'r3'].map((id) => watch(writer.record(read(id))));
    store.held[0]!.release();
    await settle();
    const after = watch(writer.record(read('r4'))); // queued behind the failing batch
    const refused = new Error('not primary');
    expect(store.held[1]!.entries.map((e) => e.requestId)).to.deep.equal(['r2', 'r3']);
    store.held[1]!.fail(refused);
    await settle();
    expect(first.settled).to.equal('resolved');
    expect(batch.map((s) => [s.settled, s.error])).to.deep.equal([
      ['rejected', refused],
      ['rejected', refused],
    ]);
    expect(after.settled).to.equal(false);
    expect(store.held[2]!.entries.map((e) => e.requestId)).to.deep.equal(['r4']);
    store.held[2]!.release();
    await writer.flushed();
    await settle();
    expect(after.settled).to.equal('resolved');
    expect(store.entries.map((e) => e.requestId)).to.deep.equal(['r1', 'r4']);
  });

  it('stamps each entry with a new time-ordered id and the clock’s time, keeping what the gateway said', async () => {
    const clock = new ManualClock(new Date('2026-12-01T10:00:00Z'));
    const store = new FakeAccessLogStore();
    const writer = new AccessLogWriter(store, clock);
    await writer.record(read('r1'));
    clock.advance(1000);
    await writer.record({ ...read('r2'), denied: 'SUBJECT_NOT_ACTIVE', count: 0 });
    const [a, b] = store.entries;
    expect(a!.createdAt.toISOString()).to.equal('2026-12-01T10:00:00.000Z');
    expect(b!.createdAt.toISOString()).to.equal('2026-12-01T10:00:01.000Z');
    expect(a!.id < b!.id, 'UUIDv7 in time order').to.equal(true);
    expect(a!.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(b).to.include({ denied: 'SUBJECT_NOT_ACTIVE', count: 0, requestId: 'r2' });
    expect(a).not.to.have.property('denied');
  });

  it('carries at most 1,000 entries in one append', async () => {
    const store = new HeldStore();
    const writer = new AccessLogWriter(store, new ManualClock());
    const first = writer.record(read('first'));
    await settle();
    const rest = Array.from({ length: 1_500 }, (_, i) => writer.record(read(`r${i}`)));
    store.held[0]!.release();
    await settle();
    expect(store.held[1]!.entries).to.have.length(1_000);
    store.held[1]!.release();
    await settle();
    expect(store.held[2]!.entries).to.have.length(500);
    store.held[2]!.release();
    await Promise.all([first, ...rest]);
    expect(store.entries).to.have.length(1_501);
  });

  it('refuses reads at once (503) while MAX_QUEUED entries wait for a stalled database, and takes them again after', async () => {
    const store = new HeldStore();
    const writer = new AccessLogWriter(store, new ManualClock());
    const first = writer.record(read('first'));
    await settle();
    const queued = Array.from({ length: MAX_QUEUED }, (_, i) => writer.record(read(`q${i}`)));
    const refused = watch(writer.record(read('over')));
    await settle();
    expect(refused.settled).to.equal('rejected');
    expect(refused.error).to.be.instanceOf(AppError);
    expect(refused.error).to.include({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect((refused.error as AppError).headers).to.deep.equal({ 'Retry-After': '1' });
    // The database answers again: everything queued is stored, and a new read is taken.
    for (let k = 0; store.held[k]; k++) {
      store.held[k]!.release();
      await settle();
    }
    await Promise.all([first, ...queued]);
    expect(store.entries).to.have.length(1 + MAX_QUEUED);
    const after = writer.record(read('after'));
    await settle();
    store.held.at(-1)!.release();
    await after;
    expect(store.entries.at(-1)).to.include({ requestId: 'after' });
  });
});
