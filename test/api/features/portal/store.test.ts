// PortalSessionStore's behaviour, held the same for the MongoDB repository (on the embedded database) and for the
// in-memory fake (docs/architecture.md, "Stores and fakes"; docs/connecting.md, "The patient's page"): a link opens
// its page once, and only before it expires; the sweep removes a session only once its link and its page expired.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { FakePortalSessionStore } from '../../../../api/src/features/portal/fake-store.js';
import {
  PortalSessionRepository,
  type PortalSession,
  type PortalSessionStore,
} from '../../../../api/src/features/portal/store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const at = (minute: number) => new Date(Date.UTC(2026, 11, 3, 14, minute));

function session(overrides: Partial<PortalSession> = {}): PortalSession {
  return {
    id: randomUUID(),
    accountId: randomUUID(),
    appUserId: 'user-1',
    linkHash: 'link-hash',
    createdAt: at(0),
    expiresAt: at(15),
    openedAt: null,
    pageHash: null,
    pageExpiresAt: null,
    ...overrides,
  };
}

describeStore<PortalSessionStore>(
  'portal: stores',
  {
    mongo: {
      name: 'PortalSessionRepository (MongoDB)',
      open: async ({ db, locks }) => {
        const repository = new PortalSessionRepository(db, locks);
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakePortalSessionStore', open: async () => new FakePortalSessionStore() },
  },
  ({ store, it }) => {
    it('opens a link once, before it expires, with the page it opened', async () => {
      const link = session();
      await store().insert(link);
      expect(await store().find(link.id)).to.deep.equal(link);
      const page = { pageHash: 'page-hash', pageExpiresAt: at(20) };
      const opened = await store().open(link.id, at(5), page);
      expect(opened).to.deep.include({ id: link.id, openedAt: at(5), ...page });
      expect(await store().open(link.id, at(6), { pageHash: 'other', pageExpiresAt: at(21) })).to.equal(null);
      expect(await store().find(link.id)).to.deep.include(page);
      const late = session();
      await store().insert(late);
      expect(await store().open(late.id, at(15), page)).to.equal(null);
      expect(await store().open(randomUUID(), at(1), page)).to.equal(null);
    });

    it('sweeps a session once its link and its page both expired', async () => {
      const early = (minute: number) => new Date(Date.UTC(2001, 0, 1, 0, minute));
      const unopened = session({ createdAt: early(0), expiresAt: early(15) });
      const open = session({
        createdAt: early(0),
        expiresAt: early(15),
        openedAt: early(1),
        pageHash: 'h',
        pageExpiresAt: early(30),
      });
      for (const s of [unopened, open]) await store().insert(s);
      expect(await store().sweep(early(20), 10)).to.equal(1);
      expect(await store().find(unopened.id)).to.equal(null);
      expect(await store().find(open.id)).to.not.equal(null);
      expect(await store().sweep(early(31), 10)).to.equal(1);
      expect(await store().find(open.id)).to.equal(null);
    });
  },
);
