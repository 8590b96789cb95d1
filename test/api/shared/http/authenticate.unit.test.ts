import { expect } from 'chai';
import {
  createAuthenticate,
  type CachedCredentials,
  type Principal,
  type Refusal,
} from '../../../../api/src/shared/http/auth.js';
import { generateKey, hashKey, type ApiKeyRecord, type KeyKind } from '../../../../api/src/shared/http/keys.js';
import { SharedCache } from '../../../../api/src/shared/infra/cache.js';

const record = (overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
  keyId: 'key_1',
  kind: 'pk',
  accountId: 'acc_1',
  appId: 'app_1',
  name: null,
  scopes: ['app_user:read'],
  createdAt: new Date('2026-12-01T00:00:00Z'),
  revokedAt: null,
  ...overrides,
});

/** One world of keys, accounts and apps, asked through the stores (async) and through what is cached (sync). */
function world(keys: Map<string, ApiKeyRecord>, accounts: Map<string, boolean>, apps: Map<string, boolean>) {
  const loads = { count: 0 };
  const stores = [
    async (hash: string) => {
      loads.count++;
      return keys.get(hash) ?? null;
    },
    async (id: string) => accounts.get(id) ?? false,
    async (id: string) => apps.get(id) ?? false,
  ] as const;
  const cached: CachedCredentials = {
    key: (hash) => keys.get(hash),
    accountActive: (id) => accounts.get(id),
    appActive: (id) => apps.get(id),
  };
  const slow = createAuthenticate(...stores);
  const fast = createAuthenticate(...stores, cached);
  return { slow, fast, loads };
}

const outcomeOf = (outcome: Principal | Refusal) => (typeof outcome === 'string' ? outcome : outcome.keyId);

describe('http: authenticating a key from what is cached', () => {
  it('gives the answer the stores give, at once, for every kind of key, account and app', async () => {
    const live = generateKey('pk');
    const revoked = generateKey('pk');
    const suspendedAccount = generateKey('pk');
    const suspendedApp = generateKey('pk');
    const platform = generateKey('sk');
    const keys = new Map<string, ApiKeyRecord>([
      [hashKey(live), record()],
      [hashKey(revoked), record({ keyId: 'key_2', revokedAt: new Date('2026-12-02T00:00:00Z') })],
      [hashKey(suspendedAccount), record({ keyId: 'key_3', accountId: 'acc_2' })],
      [hashKey(suspendedApp), record({ keyId: 'key_4', appId: 'app_2' })],
      [hashKey(platform), record({ keyId: 'key_5', kind: 'sk', appId: null })],
    ]);
    const { slow, fast, loads } = world(
      keys,
      new Map([
        ['acc_1', true],
        ['acc_2', false],
      ]),
      new Map([
        ['app_1', true],
        ['app_2', false],
      ]),
    );
    const cases: [string | undefined, KeyKind][] = [
      [`Bearer ${live}`, 'pk'],
      [`Bearer ${revoked}`, 'pk'],
      [`Bearer ${suspendedAccount}`, 'pk'],
      [`Bearer ${suspendedApp}`, 'pk'],
      [`Bearer ${platform}`, 'sk'],
      [`Bearer ${live}`, 'sk'],
      [undefined, 'pk'],
      ['Basic abc', 'pk'],
    ];
    for (const [authorization, kind] of cases) {
      const atOnce = fast(authorization, kind);
      expect(atOnce, `${authorization} as ${kind}: answered without a promise`).to.not.be.instanceOf(Promise);
      expect(outcomeOf(atOnce as Principal | Refusal), `${authorization} as ${kind}`).to.equal(
        outcomeOf(await slow(authorization, kind)),
      );
    }
    expect(outcomeOf(await fast(`Bearer ${live}`, 'pk'))).to.equal('key_1');
    expect(await fast(`Bearer ${suspendedAccount}`, 'pk')).to.equal('account-suspended');
    expect(await fast(`Bearer ${suspendedApp}`, 'pk')).to.equal('unusable');
    loads.count = 0;
    expect(fast(`Bearer ${live}`, 'pk')).to.not.be.instanceOf(Promise);
    expect(loads.count, 'nothing loaded when all is cached').to.equal(0);
  });

  it('asks the stores when anything it needs is not cached, and answers as they do', async () => {
    const key = generateKey('pk');
    const keys = new Map([[hashKey(key), record()]]);
    const { fast, loads } = world(keys, new Map([['acc_1', true]]), new Map([['app_1', true]]));
    // The app is not in the cache: the stores answer (and say it is not active).
    const uncachedApp = createAuthenticate(
      async (hash) => {
        loads.count++;
        return keys.get(hash) ?? null;
      },
      async () => true,
      async () => false,
      { key: (hash) => keys.get(hash), accountActive: () => true, appActive: () => undefined },
    );
    const outcome = uncachedApp(`Bearer ${key}`, 'pk');
    expect(outcome).to.be.instanceOf(Promise);
    expect(await outcome).to.equal('unusable');
    expect(loads.count).to.equal(1);
    // An unknown key the cache has never seen: a promise, and the stores' answer.
    const unknown = fast(`Bearer ${generateKey('pk')}`, 'pk');
    expect(unknown).to.be.instanceOf(Promise);
    expect(await unknown).to.equal('unusable');
  });

  it('answers at once for a key the cache knows to be unknown, an app key, and a record of another kind', async () => {
    const unknown = generateKey('pk');
    const appKey = generateKey('ak');
    const mislabelled = generateKey('pk');
    const keys = new Map<string, ApiKeyRecord | null>([
      [hashKey(unknown), null],
      [hashKey(appKey), record({ keyId: 'key_ak', kind: 'ak' })],
      [hashKey(mislabelled), record({ keyId: 'key_x', kind: 'ak' })],
    ]);
    const authenticate = createAuthenticate(
      async (hash) => keys.get(hash) ?? null,
      async () => true,
      async () => true,
      {
        key: (hash) => keys.get(hash),
        accountActive: (id) => (id === 'acc_1' ? true : undefined),
        appActive: () => true,
      },
    );
    expect(authenticate(`Bearer ${unknown}`, 'pk')).to.equal('unusable');
    expect(outcomeOf(authenticate(`Bearer ${appKey}`, 'ak') as Principal)).to.equal('key_ak');
    expect(authenticate(`Bearer ${mislabelled}`, 'pk')).to.equal('unusable');
    // An account the cache does not hold: the stores are asked.
    keys.set(hashKey(appKey), record({ keyId: 'key_ak', kind: 'ak', accountId: 'acc_other' }));
    const outcome = authenticate(`Bearer ${appKey}`, 'ak');
    expect(outcome).to.be.instanceOf(Promise);
    expect(outcomeOf(await outcome)).to.equal('key_ak');
  });

  it('peeks at what the shared cache holds: a value, a remembered miss (null), else undefined', async () => {
    const cache = new SharedCache<{ v: number }>('test', { max: 10, ttlMs: 60_000, missTtlMs: 60_000 }, () => {});
    expect(cache.peek('a')).to.equal(undefined);
    await cache.getOrLoad('a', async () => ({ v: 1 }));
    await cache.getOrLoad('gone', async () => null);
    expect(cache.peek('a')).to.deep.equal({ v: 1 });
    expect(cache.peek('gone')).to.equal(null);
    cache.invalidate('a');
    expect(cache.peek('a'), 'an invalidation reaches peek at once').to.equal(undefined);
  });
});
