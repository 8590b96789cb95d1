// `portico admin …` through the package bin, against a fresh database.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { repoRoot } from '#core/infra/repo-root.js';
import { hashKey } from '../../../api/src/shared/http/keys.js';
import { KEY_CACHE_TTL_MS } from '../../../api/src/shared/http/keys.js';
import { mongoUri, testRedisUrl } from '../../../testkit/services.js';
import { freePort } from '../../../testkit/machine.js';
import { TestApi } from '../../../testkit/api.js';
import { until } from '../../../testkit/until.js';

const run = promisify(execFile);

describe('cli: portico admin', function () {
  // Each test starts the command line several times (a Node process that connects to the database and Redis):
  // seconds apiece when the machine is busy, which mocha's default 30 s per test does not always cover.
  this.timeout(180_000);
  const database = `t_cli_${randomUUID().slice(0, 8)}`;
  let env: Record<string, string>;
  const portico = (...args: string[]) =>
    run(process.execPath, [path.join(repoRoot(), 'bin/portico.js'), ...args], { env });
  const fails = async (args: string[]) => {
    try {
      await portico(...args);
    } catch (error) {
      return error as { code: number; stderr: string };
    }
    throw new Error(`portico ${args.join(' ')} succeeded`);
  };
  let client: MongoClient;

  before(async () => {
    env = { PATH: process.env.PATH ?? '', MONGODB_URI: `${mongoUri()}${database}`, LOG_LEVEL: 'silent' };
    client = await new MongoClient(mongoUri()).connect();
  });
  after(async () => {
    await client.db(database).dropDatabase();
    await client.close();
  });

  it('creates an account, issues a key stored only as its hash, creates and suspends an app, revokes the key', async () => {
    const account = JSON.parse((await portico('admin', 'create-account', '--name', 'Acme Health')).stdout);
    expect(account).to.have.keys('id', 'name');

    const issued = JSON.parse(
      (await portico('admin', 'issue-key', '--account', account.id, '--scopes', 'patient:read,webhook:read')).stdout,
    );
    expect(issued.key).to.match(/^sk_[0-9A-Za-z]{40}$/);
    expect(issued.scopes).to.deep.equal(['patient:read', 'webhook:read']);
    const stored = await client.db(database).collection('api_keys').findOne({ keyId: issued.id });
    expect(stored?._id).to.equal(hashKey(issued.key));
    expect(JSON.stringify(stored)).to.not.include(issued.key);

    const app = JSON.parse(
      (await portico('admin', 'create-app', '--account', account.id, '--name', 'Companion')).stdout,
    );
    expect(app).to.include({ status: 'ACTIVE' });
    expect(app.publishableKey).to.match(/^pk_/);
    expect(app.secretKey).to.match(/^ak_/);
    const suspended = JSON.parse(
      (await portico('admin', 'update-app', '--app', app.id, '--status', 'SUSPENDED')).stdout,
    );
    expect(suspended.status).to.equal('SUSPENDED');

    await portico('admin', 'revoke-key', '--key-id', issued.id);
    expect(
      (await client.db(database).collection('api_keys').findOne({ keyId: issued.id }))?.revokedAt,
    ).to.be.an.instanceOf(Date);
    const again = await fails(['admin', 'revoke-key', '--key-id', issued.id]);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.include('NOT_FOUND');
  });

  it('lists accounts, apps and keys (ids and scopes, never a key), paged', async () => {
    const account = JSON.parse((await portico('admin', 'create-account', '--name', 'Acme Lists')).stdout);
    const issued = JSON.parse(
      (await portico('admin', 'issue-key', '--account', account.id, '--scopes', 'patient:read')).stdout,
    );
    const app = JSON.parse((await portico('admin', 'create-app', '--account', account.id, '--name', 'Listed')).stdout);
    const keys = await portico('admin', 'list-keys', '--account', account.id);
    expect(JSON.parse(keys.stdout).data.map((k: { id: string }) => k.id)).to.have.members([
      issued.id,
      app.publishableKeyId,
      app.secretKeyId,
    ]);
    for (const secret of [issued.key, app.publishableKey, app.secretKey]) expect(keys.stdout).to.not.include(secret);
    const apps = JSON.parse((await portico('admin', 'list-apps', '--account', account.id)).stdout);
    expect(apps.data.map((a: { id: string }) => a.id)).to.deep.equal([app.id]);
    const first = JSON.parse((await portico('admin', 'list-accounts', '--limit', '1')).stdout);
    expect(first.data).to.have.length(1);
    expect(first.nextCursor).to.be.a('string');
    const next = JSON.parse(
      (await portico('admin', 'list-accounts', '--limit', '1', '--cursor', first.nextCursor)).stdout,
    );
    expect(next.data[0].id).to.not.equal(first.data[0].id);
    expect((await fails(['admin', 'list-accounts', '--limit', 'many'])).code).to.equal(1);
  });

  it('keeps the default grants create-app prints for the fields --grants does not name', async () => {
    const account = JSON.parse((await portico('admin', 'create-account', '--name', 'Acme Partial')).stdout);
    const app = JSON.parse(
      (
        await portico(
          'admin',
          'create-app',
          '--account',
          account.id,
          '--name',
          'Partial',
          '--grants',
          '{"lookbackDays":30}',
        )
      ).stdout,
    );
    expect(app.grants).to.deep.equal({
      resourceTypes: ['Observation'],
      loincCodes: ['*'],
      confidentiality: ['N', 'L', 'M'],
      sensitivity: [],
      lookbackDays: 30,
    });
    const refused = await fails(['admin', 'create-app', '--account', account.id, '--name', 'X', '--grants', '[1]']);
    expect(refused.code).to.equal(1);
  });

  it('refuses to start a new embedded database when none answers where the API would have it', async () => {
    const { MONGODB_URI: _uri, ...withoutUri } = env;
    const missing = await (async () => {
      const saved = env;
      env = { ...withoutUri, PORTICO_DEVDB_PORT: String(await freePort()) };
      try {
        return await fails(['admin', 'create-account', '--name', 'Nowhere']);
      } finally {
        env = saved;
      }
    })();
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.include('no embedded database answers at').and.include('--start-database');
  });

  it('suspends and reactivates an account', async () => {
    const account = JSON.parse((await portico('admin', 'create-account', '--name', 'Acme Clinics')).stdout);
    const suspended = JSON.parse(
      (await portico('admin', 'update-account', '--account', account.id, '--status', 'SUSPENDED')).stdout,
    );
    expect(suspended).to.deep.equal({ id: account.id, name: 'Acme Clinics', status: 'SUSPENDED' });
    expect((await client.db(database).collection('customer_accounts').findOne({ _id: account.id }))?.status).to.equal(
      'SUSPENDED',
    );
    expect(
      JSON.parse((await portico('admin', 'update-account', '--account', account.id, '--status', 'ACTIVE')).stdout)
        .status,
    ).to.equal('ACTIVE');
    expect((await fails(['admin', 'update-account', '--account', account.id, '--status', 'PAUSED'])).code).to.equal(1);
  });

  it('says that a revocation without REDIS_URL reaches running API processes only when their key cache expires', async () => {
    const account = JSON.parse((await portico('admin', 'create-account', '--name', 'Gamma')).stdout);
    const issued = JSON.parse(
      (await portico('admin', 'issue-key', '--account', account.id, '--scopes', 'patient:read')).stdout,
    );
    const revoked = await portico('admin', 'revoke-key', '--key-id', issued.id);
    expect(JSON.parse(revoked.stdout)).to.deep.equal({ revoked: issued.id });
    expect(revoked.stderr).to.include('REDIS_URL is not set').and.include('up to 10 s').and.include(issued.id);
  });

  describe('with REDIS_URL, beside a running API on the same Redis', () => {
    let api: TestApi;
    before(async () => {
      api = await TestApi.start({ redis: true });
    });
    after(() => api.close());

    it('revokes a key that replica has cached, and warns of nothing', async () => {
      const tenant = await api.tenant(['webhook:read']);
      const list = () => api.request('GET', '/api/platform/v1/webhook-endpoints', { key: tenant.key });
      expect((await list()).status).to.equal(200); // the replica now holds the key in its cache
      const cachedAt = Date.now();
      const revoked = await run(
        process.execPath,
        [path.join(repoRoot(), 'bin/portico.js'), 'admin', 'revoke-key', '--key-id', tenant.keyId],
        {
          // No PORTICO_CURSOR_SECRET: the command line signs no cursor.
          env: { ...env, MONGODB_URI: `${mongoUri()}${api.config.mongodbDatabase}`, REDIS_URL: testRedisUrl() },
        },
      );
      expect(revoked.stderr).to.equal('');
      // Pub/sub delivers the invalidation before PUBLISH returns to the command line; the replica reads it a
      // moment later. The wait ends before the cached key would expire, so only the invalidation explains a 401.
      let status = 0;
      await until('the replica to refuse the revoked key', async () => (status = (await list()).status) === 401, {
        before: cachedAt + KEY_CACHE_TTL_MS - 1000,
        diagnose: () => `last status: ${status}`,
      });
    });
  });

  it('rejects bad input with the same rules as the HTTP surface', async () => {
    const account = JSON.parse((await portico('admin', 'create-account', '--name', 'Beta')).stdout);
    const badScope = await fails([
      'admin',
      'issue-key',
      '--account',
      account.id,
      '--scopes',
      'patient:read,everything',
    ]);
    expect(badScope.code).to.equal(1);
    expect(badScope.stderr).to.include('BAD_REQUEST');
    const badGrants = await fails([
      'admin',
      'create-app',
      '--account',
      account.id,
      '--name',
      'X',
      '--grants',
      '{"resourceTypes":["Claim"]}',
    ]);
    expect(badGrants.code).to.equal(1);
    expect(
      (await fails(['admin', 'issue-key', '--account', randomUUID(), '--scopes', 'patient:read'])).stderr,
    ).to.include('NOT_FOUND');
  });

  it('explains its usage and exits 2 on a usage error, before it connects to anything', async () => {
    expect((await portico('--help')).stdout).to.include('portico admin create-account');
    // Nothing listens on port 1: a command that tried to connect would fail there (exit 1), not with its usage,
    // and bad input is refused there just as it is beside a database.
    const connected = env;
    env = { ...env, MONGODB_URI: 'mongodb://127.0.0.1:1/nothing', REDIS_URL: 'redis://127.0.0.1:1' };
    try {
      for (const args of [
        ['admin'],
        ['admin', 'frobnicate'],
        ['admin', 'create-account'],
        ['nonsense'],
        ['admin', 'create-app', '--account', 'a', '--name', 'n', '--grants', '{not json'],
      ]) {
        const failure = await fails(args);
        expect(failure.code, args.join(' ')).to.equal(2);
        expect(failure.stderr).to.include('Usage:');
      }
      const badScope = await fails(['admin', 'issue-key', '--account', 'a', '--scopes', 'everything']);
      expect(badScope.code).to.equal(1);
      expect(badScope.stderr).to.include('BAD_REQUEST');
    } finally {
      env = connected;
    }
  });
});
