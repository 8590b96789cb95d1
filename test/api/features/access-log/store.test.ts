// AccessLogStore's behaviour, held the same for the MongoDB repository (on the embedded database) and for the
// in-memory fake (docs/architecture.md, "Stores and fakes"; docs/api.md, "The access log"): entries are appended as
// given, listed per account and user newest first with keyset paging and `since`, and swept by age, `limit` at a time.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { FakeAccessLogStore } from '../../../../api/src/features/access-log/fake-store.js';
import {
  AccessLogRepository,
  type AccessEntry,
  type AccessLogStore,
} from '../../../../api/src/features/access-log/store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const at = (minute: number, year = 2026) => new Date(Date.UTC(year, 11, 1, 10, minute));

function entry(overrides: Partial<AccessEntry> = {}): AccessEntry {
  return {
    id: uuidv7(),
    createdAt: at(0),
    accountId: randomUUID(),
    appId: randomUUID(),
    appUserId: 'user-1',
    connectionId: randomUUID(),
    brandId: 'brand-1',
    interaction: 'search',
    resourceType: 'Observation',
    count: 2,
    requestId: randomUUID(),
    keyId: 'key-1',
    ...overrides,
  };
}

describeStore<AccessLogStore>(
  'access log: stores',
  {
    mongo: {
      name: 'AccessLogRepository (MongoDB)',
      open: async ({ db, locks }) => {
        const repository = new AccessLogRepository(db, locks);
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeAccessLogStore', open: async () => new FakeAccessLogStore() },
  },
  ({ store, it }) => {
    it('lists what was appended as it was given, for its account and user only', async () => {
      const accountId = randomUUID();
      const answered = entry({ accountId });
      const refused = entry({
        accountId,
        createdAt: at(1),
        interaction: 'everything',
        resourceType: null,
        count: 0,
        denied: 'SUBJECT_NOT_ACTIVE',
      });
      await store().append([answered, refused]);
      await store().append([entry({ accountId, appUserId: 'user-2' }), entry({ appUserId: 'user-1' })]);
      await store().append([]);
      expect(await store().list(accountId, 'user-1', { limit: 10 })).to.deep.equal({
        items: [refused, answered],
        hasMore: false,
      });
      expect((await store().list(randomUUID(), 'user-1', { limit: 10 })).items).to.deep.equal([]);
    });

    it('pages newest first by (time, id), ties included, and keeps `since` across pages', async () => {
      const accountId = randomUUID();
      // Three at one instant (told apart by their ids), and one at each of three later minutes, appended shuffled.
      const tied = [0, 1, 2].map(() => entry({ accountId, createdAt: at(5) }));
      const later = [6, 7, 8].map((minute) => entry({ accountId, createdAt: at(minute) }));
      const older = entry({ accountId, createdAt: at(4) });
      await store().append([later[1]!, tied[2]!, older, tied[0]!, later[2]!, tied[1]!, later[0]!]);
      const expected = [...later].reverse().concat([...tied].reverse(), [older]);

      const seen: AccessEntry[] = [];
      let after: { createdAt: Date; id: string } | undefined;
      for (;;) {
        const page = await store().list(accountId, 'user-1', { limit: 2, ...(after && { after }) });
        seen.push(...page.items);
        const last = page.items.at(-1);
        if (!page.hasMore || !last) break;
        after = { createdAt: last.createdAt, id: last.id };
      }
      expect(seen.map((e) => e.id)).to.deep.equal(expected.map((e) => e.id));

      const since = await store().list(accountId, 'user-1', { limit: 3, since: at(5) });
      expect(since.items.map((e) => e.id)).to.deep.equal(expected.slice(0, 3).map((e) => e.id));
      expect(since.hasMore).to.equal(true);
      const last = since.items.at(-1)!;
      const rest = await store().list(accountId, 'user-1', {
        limit: 10,
        since: at(5),
        after: { createdAt: last.createdAt, id: last.id },
      });
      // At `since` exactly is kept; before it is not.
      expect(rest.items.map((e) => e.id)).to.deep.equal(expected.slice(3, 6).map((e) => e.id));
      expect(rest.hasMore).to.equal(false);
    });

    it('merges what several writes stored, interleaved in time (replicas side by side), page by page', async () => {
      const accountId = randomUUID();
      // Three writes whose times interleave: each one's entries span the others'.
      const writes = [0, 1, 2].map((w) =>
        [0, 3, 6, 9].map((minute) => entry({ accountId, createdAt: at(minute + w) })),
      );
      const shuffled = [writes[1]!, writes[0]!, writes[2]!];
      for (const write of shuffled) await store().append(write);
      // Another user's and another account's entries, in between, are not theirs.
      await store().append([entry({ accountId, appUserId: 'user-2', createdAt: at(4) }), entry({ createdAt: at(4) })]);
      const expected = writes
        .flat()
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1));
      for (const limit of [1, 2, 5, 12]) {
        const seen: AccessEntry[] = [];
        let after: { createdAt: Date; id: string } | undefined;
        for (;;) {
          const page = await store().list(accountId, 'user-1', { limit, ...(after && { after }) });
          seen.push(...page.items);
          const last = page.items.at(-1);
          if (!page.hasMore || !last) break;
          after = { createdAt: last.createdAt, id: last.id };
        }
        expect(
          seen.map((e) => e.id),
          `pages of ${limit}`,
        ).to.deep.equal(expected.map((e) => e.id));
      }
      const since = await store().list(accountId, 'user-1', { limit: 100, since: at(7) });
      expect(since.items.map((e) => e.id)).to.deep.equal(expected.filter((e) => e.createdAt >= at(7)).map((e) => e.id));
    });

    it('sweeps entries recorded before the cut, at most `limit` a call, keeping the rest', async () => {
      // Long ago, so that no other case's entries are old enough to be swept here.
      const accountId = randomUUID();
      const old = [0, 1, 2, 3, 4].map((minute) => entry({ accountId, createdAt: at(minute, 2001) }));
      const atCut = entry({ accountId, createdAt: at(10, 2001) });
      const newer = entry({ accountId, createdAt: at(11, 2001) });
      await store().append([...old, atCut, newer]);
      expect(await store().sweep(at(10, 2001), 3)).to.equal(3);
      // The oldest go first.
      expect((await store().list(accountId, 'user-1', { limit: 10 })).items.map((e) => e.id)).to.deep.equal(
        [newer, atCut, old[4]!, old[3]!].map((e) => e.id),
      );
      expect(await store().sweep(at(10, 2001), 10)).to.equal(2);
      expect(await store().sweep(at(10, 2001), 10)).to.equal(0);
      expect((await store().list(accountId, 'user-1', { limit: 10 })).items.map((e) => e.id)).to.deep.equal([
        newer.id,
        atCut.id,
      ]);
    });
  },
);
