// A sync's batches (docs/connecting.md, "Sync"): cut by count and by bytes, one stored while the next fills, so a
// run never holds more than its budget, and each stored batch says where the reading can resume.
import { expect } from 'chai';
import type { NormalizedObservation } from '../../../../../api/src/features/clinical/index.js';
import {
  BATCH,
  BATCH_BYTES,
  BatchWriter,
  ENTRY_BYTES,
  OTHER_BYTES,
  SYNC_BYTE_BUDGET,
} from '../../../../../api/src/features/connections/sync/batch-writer.js';

const observation = (id: string) => ({ resourceId: id }) as NormalizedObservation;

describe('sync: the batch writer', () => {
  it('cuts batches at 1,000 observations or before their JSON would pass BATCH_BYTES, whichever comes first', async () => {
    const sizes = new Map<string, number>();
    const batches: { count: number; bytes: number }[] = [];
    const writer = new BatchWriter({
      store: async (batch) => {
        batches.push({ count: batch.length, bytes: batch.reduce((sum, o) => sum + sizes.get(o.resourceId)!, 0) });
        return { ingested: batch.length, updated: 0 };
      },
      stored: async () => {},
    });
    const add = (id: string, bytes: number) => {
      sizes.set(id, bytes);
      return writer.add(observation(id), bytes, 'p');
    };
    for (let i = 0; i < 2_500; i++) await add(`small-${i}`, 600);
    // Resources of every size up to the largest an entry may be, in an order that puts big ones at batch ends.
    for (let i = 0; i < 60; i++) await add(`big-${i}`, [200 * 1024, ENTRY_BYTES, 900 * 1024, 1][i % 4]!);
    await writer.flush();
    expect(batches.slice(0, 2).map((b) => b.count)).to.deep.equal([BATCH, BATCH]);
    expect(batches.reduce((sum, b) => sum + b.count, 0)).to.equal(2_560);
    expect(Math.max(...batches.map((b) => b.bytes))).to.be.at.most(BATCH_BYTES);
    expect(writer.largestBatchBytes).to.equal(Math.max(...batches.map((b) => b.bytes)));
    // Two batches, an entry being read and a page's other parts: the 8 MiB a running sync may hold.
    expect(2 * BATCH_BYTES + ENTRY_BYTES + OTHER_BYTES).to.be.at.most(SYNC_BYTE_BUDGET);
  });

  it('counts the batch being stored as not stored: a run taken over meanwhile reads its page again', async () => {
    let release!: () => void;
    const writer = new BatchWriter({
      store: (batch) => new Promise((resolve) => (release = () => resolve({ ingested: batch.length, updated: 0 }))),
      stored: async () => {},
    });
    // The last observation of page 7 fills the batch: it goes to the database, and nothing else is pending.
    for (let i = 0; i < BATCH; i++) await writer.add(observation(`o-${i}`), 10, 'page-7');
    expect(writer.pendingFrom, 'while it is being stored').to.equal('page-7');
    release();
    await writer.flush();
    expect(writer.pendingFrom).to.equal(null);
  });

  it('fills the next batch while one is stored, never a third, and says where unstored reading began', async () => {
    const releases: (() => void)[] = [];
    const resumes: (string | null)[] = [];
    const writer = new BatchWriter({
      store: (batch) => new Promise((resolve) => releases.push(() => resolve({ ingested: batch.length, updated: 0 }))),
      stored: async (_counts, pendingFrom) => void resumes.push(pendingFrom),
    });
    for (let i = 0; i < BATCH; i++) await writer.add(observation(`a-${i}`), 10, 'page-1');
    expect(releases).to.have.length(1); // the first batch is being stored
    for (let i = 0; i < BATCH - 1; i++) await writer.add(observation(`b-${i}`), 10, i < 10 ? 'page-1' : 'page-2');
    let third = false;
    const adding = writer.add(observation('b-last'), 10, 'page-2').then(() => (third = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(third, 'waits for the first batch before a second is stored').to.equal(false);
    releases[0]!();
    await adding;
    expect(releases).to.have.length(2);
    // The first batch was stored while the second, begun on page 1, waited: the reading resumes there.
    expect(resumes).to.deep.equal(['page-1']);
    await writer.add(observation('c-0'), 10, 'page-3');
    releases[1]!();
    const flushing = writer.flush();
    while (releases.length < 3) await new Promise((resolve) => setImmediate(resolve));
    releases[2]!();
    await flushing;
    expect(resumes).to.deep.equal(['page-1', 'page-3', null]);
  });
});
