// Token keys that retire, and sealed values that open only for what they were made for (docs/connecting.md,
// "Rotating the token keys"), against the sandbox EHR: every refresh seals both tokens under the current key;
// `portico admin rewrap-tokens` seals the rest, resumably; `portico_vault_entries{kid}` shows when the old key is
// free; then the old key leaves PORTICO_TOKEN_KEYS and syncs go on. A value moved to another connection never opens.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parseTokenKeys } from '../../../../../api/src/config.js';
import { Keyring } from '../../../../../api/src/features/connections/vault/keyring.js';
import { repoRoot } from '#core/infra/repo-root.js';
import type { TestApi } from '../../../../../testkit/api.js';
import { ShiftedClock } from '../../../../../testkit/clock.js';
import { eventsOf } from '../../../../../testkit/events.js';
import { mongoUri } from '../../../../../testkit/services.js';
import {
  connectThroughBrowser,
  startSmartWorld,
  TOKEN_KEY_1,
  TOKEN_KEY_2,
  until,
  type SmartWorld,
} from '../../../../../testkit/smart.js';

const run = promisify(execFile);

interface Sealed {
  aad?: 2;
  kid: string;
  iv: string;
  ct: string;
  tag: string;
}
interface TokenDoc {
  _id: string;
  access: Sealed;
  refresh: Sealed | null;
  version: number;
}

describe('token keys that retire (sandbox EHR)', function () {
  this.timeout(180_000);
  let world: SmartWorld;
  const clock = new ShiftedClock();
  before(async () => {
    world = await startSmartWorld({ clock, tokenKeys: TOKEN_KEY_1, env: { PORTICO_SYNC_INTERVAL: '1000h' } });
  });
  after(() => world?.close());

  const tokens = () => world.api.mongo.db.collection<TokenDoc>('connection_tokens');
  const appUser = (id: string, api = world.api) =>
    api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });
  const syncAndWait = async (appUserId: string, connectionId: string, api = world.api) => {
    const since = (await appUser(appUserId, api)).body.connections[0].sync.lastSyncedAt;
    clock.advance(61_000);
    const asked = await api.request('POST', `/api/platform/v1/connections/${connectionId}/sync`, {
      key: world.tenant.key,
    });
    expect(asked.status, asked.text).to.equal(202);
    return (
      await until(
        `a sync of ${appUserId} after ${since}`,
        () => appUser(appUserId, api),
        (res) => {
          const sync = res.body.connections[0]?.sync;
          return sync?.status === 'FAILED' || (sync?.status === 'IDLE' && sync.lastSyncedAt !== since);
        },
      )
    ).body.connections[0];
  };
  const connect = async (appUserId: string) => {
    const { back } = await connectThroughBrowser(world, 'public-v2', appUserId);
    const connectionId = back.searchParams.get('connectionId')!;
    await until(
      'the first sync',
      () => appUser(appUserId),
      (res) => res.body.connections[0]?.sync?.lastSyncedAt !== null,
    );
    return connectionId;
  };
  const vaultEntries = async (api = world.api) => {
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    return Object.fromEntries(
      [...metrics.matchAll(/^portico_vault_entries\{kid="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]),
    );
  };
  /**
   * Runs `work` with a replica holding `tokenKeys` as the only one that syncs (the first replica's worker stops
   * meanwhile), so what a sync does is done with those keys.
   */
  const onlyWith = async <T>(tokenKeys: string, work: (replica: TestApi) => Promise<T>): Promise<T> => {
    const runner = world.api.services.connections.syncRunner;
    await runner.stop();
    // (A replica shares the database, which closing one drops: the world closes them at its end.)
    const replica = await world.replica({ tokenKeys, sync: true });
    try {
      return await work(replica);
    } finally {
      await replica.services.connections.syncRunner.stop();
      runner.start();
    }
  };
  const rewrap = async (keys: string) =>
    JSON.parse(
      (
        await run(process.execPath, [path.join(repoRoot(), 'bin/portico.js'), 'admin', 'rewrap-tokens'], {
          env: {
            PATH: process.env.PATH ?? '',
            MONGODB_URI: `${mongoUri()}${world.api.config.mongodbDatabase}`,
            PORTICO_TOKEN_KEYS: keys,
            LOG_LEVEL: 'silent',
          },
        })
      ).stdout,
    );

  it('seals both tokens under the current key on every refresh, rotated or not', async () => {
    const id = await connect('keys-reseal');
    expect((await tokens().findOne({ _id: id }))?.refresh?.kid).to.equal('k1');
    world.ehr.switches.rotateRefreshTokens = false;
    try {
      world.ehr.switches.expireAccessTokens();
      const done = await onlyWith(`${TOKEN_KEY_2},${TOKEN_KEY_1}`, (rotated) =>
        syncAndWait('keys-reseal', id, rotated),
      );
      expect(done.sync.lastError).to.equal(null);
    } finally {
      world.ehr.switches.rotateRefreshTokens = true;
    }
    const doc = (await tokens().findOne({ _id: id }))!;
    expect([doc.access.kid, doc.refresh?.kid, doc.refresh?.aad]).to.deep.equal(['k2', 'k2', 2]);
  });

  it('retires k1: rewrap-tokens (resumable), the gauge at 0, k1 removed, syncs go on', async () => {
    const ids = [await connect('keys-a'), await connect('keys-b'), await connect('keys-c')];
    // One entry as an earlier release sealed it (its binding named the connection and field only).
    const keyring = new Keyring(parseTokenKeys(TOKEN_KEY_1)!);
    await tokens().updateOne(
      { _id: ids[2]! },
      { $set: { access: keyring.seal('a-legacy-access-token', `${ids[2]}/access`) } },
    );
    const k1 = (await vaultEntries())['k1']!;
    expect(k1).to.be.at.least(3);

    const first = await rewrap(`${TOKEN_KEY_2},${TOKEN_KEY_1}`);
    expect(first).to.include({ key: 'k2', unreadable: 0, changed: 0 });
    expect(first.rewrapped).to.be.at.least(3);
    expect(first.scanned).to.equal(first.rewrapped + first.current);
    const again = await rewrap(`${TOKEN_KEY_2},${TOKEN_KEY_1}`);
    expect(again).to.include({ rewrapped: 0, current: first.scanned });
    for (const doc of await tokens().find({}).toArray())
      expect([doc.access.kid, doc.access.aad, doc.refresh?.kid ?? 'k2']).to.deep.equal(['k2', 2, 'k2']);

    await onlyWith(TOKEN_KEY_2, async (k2only) => {
      const entries = await vaultEntries(k2only);
      expect(entries['k1'], 'no entry sealed under k1 any more').to.equal(undefined);
      expect(entries['k2']).to.equal(first.scanned);
      // k1 is gone from the keys: the connections it sealed sync on, refreshing their tokens on the way.
      world.ehr.switches.expireAccessTokens();
      for (const [user, id] of [
        ['keys-a', ids[0]!],
        ['keys-b', ids[1]!],
      ] as const) {
        const done = await syncAndWait(user, id, k2only);
        expect(done.sync.lastError, user).to.equal(null);
        expect(done.status).to.equal('ACTIVE');
      }
    });
  });

  it('never opens a sealed value moved to another connection: that connection waits for its patient', async () => {
    const [from, to] = [await connect('keys-moved-from'), await connect('keys-moved-to')];
    const source = (await tokens().findOne({ _id: from }))!;
    await tokens().updateOne({ _id: to }, { $set: { access: source.access, refresh: source.refresh } });
    const done = await syncAndWait('keys-moved-to', to);
    expect(done.sync.lastError).to.equal('reauthorization_required');
    expect(done).to.deep.include({ status: 'REAUTHORIZATION_REQUIRED', statusReason: 'token_unreadable' });
    expect(await tokens().findOne({ _id: to })).to.equal(null);
    const events = await eventsOf(world.api.mongo.db, world.tenant.accountId);
    expect(events.map((e) => [e.type, e.data])).to.deep.include([
      'connection.reauthorization_required',
      { connectionId: to, appUserId: 'keys-moved-to', brandId: world.brands['public-v2'], reason: 'token_unreadable' },
    ]);
    // The connection the value came from is untouched.
    expect((await syncAndWait('keys-moved-from', from)).sync.lastError).to.equal(null);
  });

  it('fails the sync, keeping the connection, while a key is missing from PORTICO_TOKEN_KEYS', async () => {
    const id = await connect('keys-missing');
    const done = await onlyWith(`k9:${Buffer.alloc(32, 9).toString('base64')}`, (other) =>
      syncAndWait('keys-missing', id, other),
    );
    expect(done.sync.lastError).to.equal('token_key_missing');
    expect(done.status).to.equal('ACTIVE');
    expect(await tokens().findOne({ _id: id })).to.not.equal(null);
  });
});
