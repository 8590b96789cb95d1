// LinkTokenStore's behaviour, held the same for the MongoDB repository (on the embedded database) and for the
// in-memory fake (docs/architecture.md, "Stores and fakes"; docs/connecting.md, "Link tokens"): a token is minted
// once under its hash, spent exactly once (unused and unexpired → used), given back only by the session that spent
// it, and swept some time after it expired, used or not.
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { FakeLinkTokenStore } from '../../../../api/src/features/connect-sessions/fake-link-token-store.js';
import {
  LinkTokenRepository,
  type LinkToken,
  type LinkTokenStore,
} from '../../../../api/src/features/connect-sessions/link-token-store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 10, minute));

function token(overrides: Partial<LinkToken> = {}): LinkToken {
  return {
    hash: randomBytes(32).toString('hex'),
    accountId: randomUUID(),
    appId: randomUUID(),
    appUserId: 'user-1',
    redirectUri: 'https://app.example.com/back',
    brandId: null,
    connectionId: null,
    createdAt: at(0),
    expiresAt: at(30),
    usedAt: null,
    sessionId: null,
    ...overrides,
  };
}

describeStore<LinkTokenStore>(
  'connect-sessions: link token stores',
  {
    mongo: {
      name: 'LinkTokenRepository (MongoDB)',
      open: async ({ db, locks }) => {
        const repository = new LinkTokenRepository(db, locks);
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeLinkTokenStore', open: async () => new FakeLinkTokenStore() },
  },
  ({ store, it }) => {
    it('reads a minted token back by its hash, with everything it binds, and nothing for an unknown hash', async () => {
      const minted = token({ brandId: 'brand-1', connectionId: randomUUID() });
      await store().insert(minted);
      expect(await store().find(minted.hash)).to.deep.equal(minted);
      expect(await store().find(token().hash)).to.equal(null);
    });

    it('refuses a hash that exists (duplicate key), keeping the first token', async () => {
      const minted = token();
      await store().insert(minted);
      const error = await store()
        .insert({ ...minted, appUserId: 'user-2' })
        .catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect(await store().find(minted.hash)).to.deep.equal(minted);
    });

    it('spends an unused, unexpired token exactly once, for the session that spent it', async () => {
      const minted = token();
      await store().insert(minted);
      const [first, second] = [randomUUID(), randomUUID()];
      expect(await store().spend(minted.hash, first, at(10))).to.equal(true);
      expect(await store().spend(minted.hash, second, at(11)), 'used').to.equal(false);
      expect(await store().spend(minted.hash, first, at(12)), 'used, even by the session that spent it').to.equal(
        false,
      );
      expect(await store().find(minted.hash)).to.deep.equal({ ...minted, usedAt: at(10), sessionId: first });
    });

    it('refuses an expired token, from the instant it expires, and leaves it unspent', async () => {
      const minted = token();
      await store().insert(minted);
      expect(await store().spend(minted.hash, randomUUID(), at(30)), 'at expiresAt').to.equal(false);
      expect(await store().spend(minted.hash, randomUUID(), at(31))).to.equal(false);
      expect(await store().find(minted.hash)).to.deep.equal(minted);
      const other = token();
      await store().insert(other);
      expect(await store().spend(other.hash, randomUUID(), new Date(at(30).getTime() - 1)), 'a moment before').to.equal(
        true,
      );
    });

    it('spends nothing for an unknown hash, and creates no token for it', async () => {
      const unknown = token();
      expect(await store().spend(unknown.hash, randomUUID(), at(1))).to.equal(false);
      await store().unspend(unknown.hash, randomUUID());
      expect(await store().find(unknown.hash)).to.equal(null);
    });

    it('gives a token back only for the session that spent it, and a token given back is spent again once', async () => {
      const minted = token();
      await store().insert(minted);
      const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
      await store().unspend(minted.hash, first); // not spent yet: nothing to give back
      expect(await store().find(minted.hash)).to.deep.equal(minted);
      await store().spend(minted.hash, first, at(10));
      await store().unspend(minted.hash, second);
      expect(await store().find(minted.hash), 'another session').to.deep.equal({
        ...minted,
        usedAt: at(10),
        sessionId: first,
      });
      await store().unspend(minted.hash, first);
      expect(await store().find(minted.hash)).to.deep.equal(minted);
      expect(await store().spend(minted.hash, second, at(11))).to.equal(true);
      expect(await store().spend(minted.hash, third, at(12))).to.equal(false);
      await store().unspend(minted.hash, first); // no longer the first session's
      expect(await store().find(minted.hash)).to.deep.equal({ ...minted, usedAt: at(11), sessionId: second });
    });

    it('sweeps at most `limit` tokens that expired before the cut-off, used or not, and keeps the others', async () => {
      const before = at(60);
      await store().sweep(before, 1_000); // what earlier cases left on the suite's database
      const expired = [
        token({ expiresAt: at(40) }),
        token({ expiresAt: at(50) }),
        token({ expiresAt: new Date(before.getTime() - 1), usedAt: at(20), sessionId: randomUUID() }),
      ];
      const kept = [
        token({ expiresAt: before }),
        token({ expiresAt: at(90), usedAt: at(20), sessionId: randomUUID() }),
      ];
      for (const minted of [...expired, ...kept]) await store().insert(minted);
      expect(await store().sweep(before, 2)).to.equal(2);
      expect(await store().sweep(before, 10)).to.equal(1);
      expect(await store().sweep(before, 10)).to.equal(0);
      for (const { hash } of expired) expect(await store().find(hash)).to.equal(null);
      for (const minted of kept) expect(await store().find(minted.hash)).to.deep.equal(minted);
    });
  },
);
