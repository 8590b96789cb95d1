// The read of a patient no cache holds yet, on the embedded database, counted in driver commands: the patient's
// own read by the tenant's _id carries the tenant check (its tenant tuple is taken from it), so it is the only
// read; another tenant's patient is never read at all.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MongoClient, type CommandStartedEvent, type Db } from 'mongodb';
import { FakeAccountStore } from '../../../../api/src/features/accounts/fake-store.js';
import { memberTuple } from '../../../../api/src/features/admin/service.js';
import { AuthorizationService } from '../../../../api/src/features/authz/check.js';
import { TupleRepository } from '../../../../api/src/features/authz/tuples.js';
import { PatientService } from '../../../../api/src/features/patients/service.js';
import { PatientRepository } from '../../../../api/src/features/patients/store.js';
import { FakeOutbox } from '../../../../api/src/features/events/fake-outbox.js';
import type { Principal } from '../../../../api/src/shared/http/auth.js';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { rejection } from '../../../../testkit/expect.js';
import { mongoUri } from '../../../../testkit/services.js';

describe('platform: a cold patient read (embedded database, commands counted)', () => {
  let client: MongoClient;
  let db: Db;
  const commands: CommandStartedEvent[] = [];
  let service: PatientService;
  let accounts: FakeAccountStore;
  let authz: AuthorizationService;
  const clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z'));

  before(async () => {
    client = await new MongoClient(mongoUri(), { monitorCommands: true }).connect();
    client.on('commandStarted', (event) => commands.push(event));
    db = client.db(`t_${randomUUID().replaceAll('-', '').slice(0, 16)}`);
    const locks = await documentLocksFor(db);
    const caches = await CacheHub.create();
    const tuples = new TupleRepository(db, locks, caches.cache('authz', { max: 1000, ttlMs: 60_000 }));
    await tuples.init();
    authz = new AuthorizationService(tuples, caches.cache('authz-granted', { max: 1000, ttlMs: 60_000 }));
    const patients = new PatientRepository(db, locks, caches.cache('patients', { max: 1000, ttlMs: 60_000 }));
    accounts = new FakeAccountStore();
    service = new PatientService({ patients, authz, accounts, outbox: new FakeOutbox(clock), clock });
  });

  after(async () => {
    await db.dropDatabase();
    await client.close();
  });

  async function tenant(): Promise<Principal> {
    const accountId = randomUUID();
    const keyId = randomUUID();
    await accounts.insert({ id: accountId, name: 'Acme', status: 'ACTIVE', createdAt: clock.now() });
    await authz.grant(accountId, memberTuple(accountId, keyId));
    return { keyId, kind: 'sk', accountId, appId: null, scopes: new Set(['patient:read']) };
  }

  /** The reads `work` sends to the database: collection and filter. */
  async function readsOf(work: () => Promise<unknown>): Promise<[string, unknown][]> {
    commands.length = 0;
    await work();
    return commands.filter((c) => c.commandName === 'find').map((c) => [c.command.find as string, c.command.filter]);
  }

  it("reads a patient never read before with one query: its own _id, which names the caller's tenant", async () => {
    const principal = await tenant();
    const [warm, cold] = [
      await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' }),
      await service.create(principal, { givenName: 'Grace', familyName: 'Hopper' }),
    ];
    await service.get(principal, warm.id); // the key's membership is read once, then cached
    const reads = await readsOf(async () => expect(await service.get(principal, cold.id)).to.deep.equal(cold));
    expect(reads).to.deep.equal([['patients', { _id: `${principal.accountId}/${cold.id}` }]]);
  });

  it("never reads another tenant's patient: the caller's own tenant is asked, and the answer is the uniform 403", async () => {
    const [owner, caller] = [await tenant(), await tenant()];
    const foreign = await service.create(owner, { givenName: 'Ada', familyName: 'Lovelace' });
    let error: Error | undefined;
    const reads = await readsOf(async () => (error = await rejection(service.get(caller, foreign.id))));
    expect(error).to.include({ code: 'PLATFORM_ACCESS_DENIED' });
    const patientReads = reads.filter(([collection]) => collection === 'patients');
    expect(patientReads).to.deep.equal([['patients', { _id: `${caller.accountId}/${foreign.id}` }]]);
    expect(JSON.stringify(reads)).to.not.include(owner.accountId);
  });

  it('still answers 404 for a deleted patient read cold', async () => {
    const principal = await tenant();
    const created = await service.create(principal, { givenName: 'Ada', familyName: 'Lovelace' });
    await service.delete(principal, created.id, undefined);
    expect(await rejection(service.get(principal, created.id))).to.include({ code: 'NOT_FOUND' });
  });
});
