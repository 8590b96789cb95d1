// A sync's batches (docs/connecting.md, "Sync"): cut by count and by bytes, one stored while the next fills, so a
// run never holds more than its budget, and each stored batch says where the reading can resume.
import { expect } from 'chai';
import type { NormalizedObservation } from '../../../../api/src/features/clinical/index.js';
import {
  BATCH,
  BATCH_BYTES,
  BatchWriter,
  MAX_RESOURCE_BYTES,
  SYNC_BYTE_BUDGET,
} from '../../../../api/src/features/sync/batch-writer.js';

const observation = (id: string) => ({ resourceId: id }) as NormalizedObservation;

describe('sync: the batch writer', () => {
  it('cuts batches at 1,000 observations or at their byte budget, whichever comes first', async () => {
    const stored: number[] = [];
    const writer = new BatchWriter({
      store: async (batch) => {
        stored.push(batch.length);
        return { ingested: batch.length, updated: 0 };
      },
      stored: async () => {},
    });
    for (let i = 0; i < 2_500; i++) await writer.add(observation(`small-${i}`), 600, 'p');
    const big = 200 * 1024;
    for (let i = 0; i < 40; i++) await writer.add(observation(`big-${i}`), big, 'p');
    await writer.flush();
    expect(stored.slice(0, 2)).to.deep.equal([BATCH, BATCH]);
    expect(stored.reduce((a, b) => a + b, 0)).to.equal(2_540);
    const perBigBatch = Math.ceil(BATCH_BYTES / big);
    expect(Math.max(...stored.slice(3))).to.be.at.most(perBigBatch);
    expect(2 * BATCH_BYTES + MAX_RESOURCE_BYTES).to.be.at.most(SYNC_BYTE_BUDGET);
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
