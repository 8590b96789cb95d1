// TokenStore's behaviour, held the same for the MongoDB repository (on the embedded database) and for the in-memory
// fake the vault's unit tests use (docs/architecture.md, "Stores and fakes"): one record per connection, replaced
// at a new version; one refresh claimed at a time, while the record is at the version read and nobody's claim
// stands, its result stored only while the claim is its holder's; deletes and reseals at the version read; the
// rewrap's walk in id order; the count of records under each key.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { FakeTokenStore } from '../../../../../api/src/features/connections/vault/fake-store.js';
import type { Sealed } from '../../../../../api/src/features/connections/vault/keyring.js';
import {
  TokenRepository,
  type TokenRecord,
  type TokenStore,
} from '../../../../../api/src/features/connections/vault/store.js';
import { describeStore } from '../../../../../testkit/store-behaviour.js';

const at = (second: number) => new Date(Date.UTC(2026, 10, 20, 10, 0, second));

/** A sealed value under `kid` (the store never opens one: any text will do). */
const sealed = (kid: string, text = randomUUID()): Sealed => ({ aad: 2, kid, iv: text, ct: text, tag: text });

type Stored = Omit<TokenRecord, 'version' | 'refreshing'>;

function tokens(overrides: Partial<Stored> = {}): Stored {
  return {
    connectionId: randomUUID(),
    accountId: randomUUID(),
    brand: { id: 'brand-1', platformType: 'EPIC', fhirBaseUrl: 'https://fhir.example.org/r4' },
    access: sealed('k1'),
    refresh: sealed('k1'),
    expiresAt: at(30),
    updatedAt: at(0),
    ...overrides,
  };
}

const fresh = () => ({ access: sealed('k2'), refresh: sealed('k2'), expiresAt: at(90) });

describeStore<TokenStore>(
  'connections: token stores',
  {
    mongo: { name: 'TokenRepository (MongoDB)', open: async ({ db, locks }) => new TokenRepository(db, locks) },
    fake: { name: 'FakeTokenStore', open: async () => new FakeTokenStore() },
  },
  ({ store, it }) => {
    it('knows no tokens never put; puts a record at version 1 with no refresh claimed, and reads it back', async () => {
      expect(await store().get(randomUUID())).to.equal(null);
      const put = tokens();
      await store().put(put);
      expect(await store().get(put.connectionId)).to.deep.equal({ ...put, version: 1, refreshing: null });
      const withoutRefresh = tokens({ refresh: null, expiresAt: null });
      await store().put(withoutRefresh);
      expect(await store().get(withoutRefresh.connectionId)).to.deep.include({ refresh: null, expiresAt: null });
    });

    it('replaces the record on a second put (a reconnect) at the next version, ending a refresh in flight', async () => {
      const first = tokens();
      await store().put(first);
      expect(await store().claimRefresh(first.connectionId, 1, 'replica-a', at(1), at(61))).to.equal(true);
      const second = tokens({ connectionId: first.connectionId, accountId: first.accountId, updatedAt: at(2) });
      await store().put(second);
      expect(await store().get(first.connectionId)).to.deep.equal({ ...second, version: 2, refreshing: null });
      expect(await store().refreshed(first.connectionId, 'replica-a', fresh(), at(3)), 'the refresh').to.equal(false);
      expect(await store().get(first.connectionId)).to.deep.equal({ ...second, version: 2, refreshing: null });
    });

    it('numbers a record put after a delete from version 1 again', async () => {
      const put = tokens();
      await store().put(put);
      await store().put(put);
      expect(await store().delete(put.connectionId)).to.equal(true);
      await store().put(put);
      expect(await store().get(put.connectionId)).to.deep.include({ version: 1 });
    });

    it('claims a refresh at the version read while nobody holds one, without a new version', async () => {
      const put = tokens();
      await store().put(put);
      const id = put.connectionId;
      expect(await store().claimRefresh(id, 2, 'replica-a', at(1), at(61)), 'a version never stored').to.equal(false);
      expect(await store().claimRefresh(randomUUID(), 1, 'replica-a', at(1), at(61)), 'no record').to.equal(false);
      expect(await store().claimRefresh(id, 1, 'replica-a', at(1), at(61))).to.equal(true);
      expect(await store().get(id)).to.deep.equal({
        ...put,
        version: 1,
        refreshing: { holder: 'replica-a', until: at(61) },
      });
      expect(await store().claimRefresh(id, 1, 'replica-b', at(2), at(62)), 'while it stands').to.equal(false);
      expect(await store().claimRefresh(id, 1, 'replica-b', at(61), at(121)), 'at its very end').to.equal(false);
      expect(await store().claimRefresh(id, 1, 'replica-a', at(2), at(62)), 'its holder again').to.equal(false);
      expect(await store().get(id)).to.deep.include({ refreshing: { holder: 'replica-a', until: at(61) } });
    });

    it('lets a claim that lapsed be taken over, at the version read only; its first holder then stores nothing', async () => {
      const put = tokens();
      await store().put(put);
      const id = put.connectionId;
      await store().claimRefresh(id, 1, 'replica-a', at(1), at(61));
      expect(await store().claimRefresh(id, 2, 'replica-b', at(62), at(122)), 'a version never stored').to.equal(false);
      expect(await store().claimRefresh(id, 1, 'replica-b', at(62), at(122))).to.equal(true);
      expect(await store().get(id)).to.deep.include({
        version: 1,
        refreshing: { holder: 'replica-b', until: at(122) },
      });
      expect(await store().refreshed(id, 'replica-a', fresh(), at(63)), 'the first holder').to.equal(false);
      await store().release(id, 'replica-a');
      expect(await store().get(id)).to.deep.equal({
        ...put,
        version: 1,
        refreshing: { holder: 'replica-b', until: at(122) },
      });
    });

    it("stores a refresh's tokens while its holder's claim is its own, at the next version, ending the claim", async () => {
      const put = tokens();
      await store().put(put);
      const id = put.connectionId;
      expect(await store().refreshed(id, 'replica-a', fresh(), at(2)), 'nobody claimed it').to.equal(false);
      expect(await store().refreshed(randomUUID(), 'replica-a', fresh(), at(2)), 'no record').to.equal(false);
      await store().claimRefresh(id, 1, 'replica-a', at(1), at(61));
      expect(await store().refreshed(id, 'replica-b', fresh(), at(2)), 'another holder').to.equal(false);
      expect(await store().get(id)).to.deep.include({ access: put.access, version: 1 });
      const refreshed = fresh();
      expect(await store().refreshed(id, 'replica-a', refreshed, at(2))).to.equal(true);
      expect(await store().get(id)).to.deep.equal({
        ...put,
        ...refreshed,
        updatedAt: at(2),
        version: 2,
        refreshing: null,
      });
      expect(await store().refreshed(id, 'replica-a', fresh(), at(3)), 'twice').to.equal(false);
      expect(await store().claimRefresh(id, 1, 'replica-b', at(3), at(63)), 'at the version before').to.equal(false);
      expect(await store().claimRefresh(id, 2, 'replica-b', at(3), at(63))).to.equal(true);
    });

    it('stores a refresh whose claim lapsed while nobody took it over (the claim is still its holder’s)', async () => {
      const put = tokens();
      await store().put(put);
      await store().claimRefresh(put.connectionId, 1, 'replica-a', at(1), at(61));
      expect(await store().refreshed(put.connectionId, 'replica-a', fresh(), at(100))).to.equal(true);
      expect(await store().get(put.connectionId)).to.deep.include({ version: 2, refreshing: null, updatedAt: at(100) });
    });

    it('releases a claim for its holder only, changing nothing else: the refresh is free again at the same version', async () => {
      const put = tokens();
      await store().put(put);
      const id = put.connectionId;
      await store().claimRefresh(id, 1, 'replica-a', at(1), at(61));
      await store().release(id, 'replica-b');
      expect(await store().get(id)).to.deep.include({ refreshing: { holder: 'replica-a', until: at(61) } });
      await store().release(id, 'replica-a');
      expect(await store().get(id)).to.deep.equal({ ...put, version: 1, refreshing: null });
      await store().release(id, 'replica-a'); // nothing held: nothing to do
      await store().release(randomUUID(), 'replica-a');
      expect(await store().claimRefresh(id, 1, 'replica-b', at(2), at(62))).to.equal(true);
    });

    it('deletes whatever the version when none is named; at the version named only when one is', async () => {
      const [any, versioned] = [tokens(), tokens()];
      await store().put(any);
      await store().put(any);
      expect(await store().delete(any.connectionId)).to.equal(true);
      expect(await store().get(any.connectionId)).to.equal(null);
      expect(await store().delete(any.connectionId), 'gone').to.equal(false);
      await store().put(versioned);
      await store().put(versioned); // a reconnect: version 2
      expect(await store().delete(versioned.connectionId, 1), 'the tokens read before it').to.equal(false);
      expect(await store().get(versioned.connectionId)).to.deep.include({ version: 2 });
      expect(await store().delete(versioned.connectionId, 2)).to.equal(true);
      expect(await store().get(versioned.connectionId)).to.equal(null);
      expect(await store().delete(versioned.connectionId, 2), 'gone').to.equal(false);
    });

    it('deletes at the version read while a refresh is claimed (the claim is no version)', async () => {
      const put = tokens();
      await store().put(put);
      await store().claimRefresh(put.connectionId, 1, 'replica-a', at(1), at(61));
      expect(await store().delete(put.connectionId, 1)).to.equal(true);
      expect(await store().refreshed(put.connectionId, 'replica-a', fresh(), at(2))).to.equal(false);
      expect(await store().get(put.connectionId)).to.equal(null);
    });

    it('pages through the records in connection-id order, after the id given, up to the limit', async () => {
      // The suite's database holds other cases' records: this case's ids share a prefix, and sort together.
      const prefix = randomUUID();
      const ids = ['c', 'a', 'e', 'b', 'd'].map((letter) => `${prefix}/${letter}`);
      for (const connectionId of ids) await store().put(tokens({ connectionId }));
      const sorted = [...ids].sort();
      const first = await store().page(prefix, 2);
      expect(first.map((r) => r.connectionId)).to.deep.equal(sorted.slice(0, 2));
      expect(first[0]).to.deep.include({ version: 1, refreshing: null });
      const second = await store().page(first[1]!.connectionId, 2);
      expect(second.map((r) => r.connectionId)).to.deep.equal(sorted.slice(2, 4));
      const third = await store().page(second[1]!.connectionId, 2);
      expect(third[0]?.connectionId).to.equal(sorted[4]);
      const after = await store().page(sorted[4]!, 10);
      expect(after.filter((r) => r.connectionId.startsWith(prefix))).to.deep.equal([]);
      // A limit of 0 is none (the driver's): every record after the id.
      const all = await store().page(prefix, 0);
      expect(all.map((r) => r.connectionId).filter((id) => id.startsWith(prefix))).to.deep.equal(sorted);
    });

    it('reseals at the version read only, keeping the version, the date and a claim in flight', async () => {
      const put = tokens();
      await store().put(put);
      const id = put.connectionId;
      await store().claimRefresh(id, 1, 'replica-a', at(1), at(61));
      const again = { access: sealed('k2'), refresh: sealed('k2') };
      expect(await store().resealed(id, 2, again), 'a version never stored').to.equal(false);
      expect(await store().resealed(randomUUID(), 1, again), 'no record').to.equal(false);
      expect(await store().get(id)).to.deep.include({ access: put.access, refresh: put.refresh });
      expect(await store().resealed(id, 1, again)).to.equal(true);
      expect(await store().get(id)).to.deep.equal({
        ...put,
        ...again,
        version: 1,
        refreshing: { holder: 'replica-a', until: at(61) },
      });
      // A refresh stored meanwhile moved the version on: the reseal of what was read before is refused.
      await store().refreshed(id, 'replica-a', fresh(), at(2));
      expect(await store().resealed(id, 1, { access: sealed('k3'), refresh: null })).to.equal(false);
      expect(await store().get(id)).to.deep.include({ version: 2 });
    });

    it('counts the records under each key, a record sealed under two keys under both', async () => {
      // Keys of this case's own, so the other cases' records do not count.
      const [k1, k2, k3] = [randomUUID(), randomUUID(), randomUUID()];
      await store().put(tokens({ access: sealed(k1), refresh: sealed(k1) }));
      await store().put(tokens({ access: sealed(k1), refresh: sealed(k1) }));
      await store().put(tokens({ access: sealed(k2), refresh: sealed(k1) }));
      await store().put(tokens({ access: sealed(k2), refresh: null }));
      const changing = tokens({ access: sealed(k3), refresh: sealed(k3) });
      await store().put(changing);
      await store().resealed(changing.connectionId, 1, { access: sealed(k2), refresh: sealed(k2) });
      const counts = await store().entriesByKey();
      expect([k1, k2, k3].map((kid) => counts.get(kid))).to.deep.equal([3, 3, undefined]);
    });

    it('keeps what it stores apart from what callers hold: changing either changes nothing stored', async () => {
      const put = tokens();
      await store().put(put);
      const expected = { ...structuredClone(put), version: 1, refreshing: null };
      put.access.kid = 'changed';
      put.brand.fhirBaseUrl = 'https://elsewhere.example.org';
      const read = (await store().get(put.connectionId))!;
      read.access.kid = 'changed';
      read.expiresAt!.setTime(0);
      (await store().page(put.connectionId.slice(0, -1), 1))[0]!.access.kid = 'changed';
      expect(await store().get(put.connectionId)).to.deep.equal(expected);
      const refreshed = fresh();
      await store().claimRefresh(put.connectionId, 1, 'replica-a', at(1), at(61));
      await store().refreshed(put.connectionId, 'replica-a', refreshed, at(2));
      const stored = structuredClone(refreshed.access);
      refreshed.access.kid = 'changed';
      expect((await store().get(put.connectionId))!.access).to.deep.equal(stored);
    });
  },
);
