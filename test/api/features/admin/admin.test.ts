import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { ADMIN_TOKEN, TestApi } from '../../../../testkit/api.js';
import { buildPatient } from '../../../../testkit/factories.js';

const ADMIN = '/api/admin/v1';
const GRANTS = {
  resourceTypes: ['Observation'],
  loincCodes: ['*'],
  confidentiality: ['N', 'L', 'M'],
  sensitivity: [],
  lookbackDays: null,
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('admin surface', () => {
  describe('without PORTICO_ADMIN_TOKEN', () => {
    let api: TestApi;
    before(async () => {
      api = await TestApi.start({ env: { PORTICO_ADMIN_TOKEN: '' } });
    });
    after(() => api.close());

    const calls: [string, string][] = [
      ['POST', '/customer-accounts'],
      ['POST', `/customer-accounts/${randomUUID()}/api-keys`],
      ['DELETE', `/api-keys/${randomUUID()}`],
      ['POST', `/customer-accounts/${randomUUID()}/apps`],
      ['PATCH', `/apps/${randomUUID()}`],
    ];
    it('answers 404 on every admin path, with or without a token', async () => {
      for (const [method, path] of calls) {
        for (const key of [ADMIN_TOKEN, undefined, 'anything-at-all-1234567890']) {
          const res = await api.request(method, ADMIN + path, {
            key,
            body: method === 'DELETE' ? undefined : { name: 'x' },
          });
          expect(res.status, `${method} ${path} ${key ? 'with' : 'without'} token`).to.equal(404);
          expect(res.body.code).to.equal('NOT_FOUND');
          expect(res.headers.get('www-authenticate')).to.equal(null);
        }
      }
    });
  });

  describe('with PORTICO_ADMIN_TOKEN', () => {
    let api: TestApi;
    before(async () => {
      api = await TestApi.start();
    });
    after(() => api.close());

    const account = async () =>
      (await api.admin('POST', '/customer-accounts', { name: `Account ${randomUUID().slice(0, 8)}` })).body
        .id as string;

    it('refuses a missing or wrong token with 401', async () => {
      const none = await api.request('POST', `${ADMIN}/customer-accounts`, { body: { name: 'Nope' } });
      expect(none.status).to.equal(401);
      expect(none.headers.get('www-authenticate')).to.equal('Bearer realm="portico"');
      for (const wrong of [`${ADMIN_TOKEN}x`, ADMIN_TOKEN.slice(0, -1), 'test-admin-token-0123456788']) {
        const res = await api.request('POST', `${ADMIN}/customer-accounts`, { key: wrong, body: { name: 'Nope' } });
        expect(res.status, wrong).to.equal(401);
        expect(res.body.code).to.equal('UNAUTHORIZED');
        expect(res.headers.get('www-authenticate')).to.equal('Bearer realm="portico", error="invalid_token"');
      }
    });

    it('creates a customer account: 201 {id, name}', async () => {
      const res = await api.admin('POST', '/customer-accounts', { name: 'Acme Health' });
      expect(res.status).to.equal(201);
      expect(res.body).to.have.all.keys('id', 'name');
      expect(res.body.name).to.equal('Acme Health');
      expect(res.body.id).to.match(UUID);
    });

    it("lists accounts, an account's apps and its keys, newest first and paged, never showing a key", async () => {
      const id = await account();
      const app = await api.admin('POST', `/customer-accounts/${id}/apps`, {
        name: 'Listed',
        grants: {
          resourceTypes: ['Observation'],
          loincCodes: ['*'],
          confidentiality: ['N'],
          sensitivity: [],
          lookbackDays: null,
        },
      });
      const issued = await api.admin('POST', `/customer-accounts/${id}/api-keys`, {
        scopes: ['patient:read'],
        name: 'CI',
      });
      await api.admin('DELETE', `/api-keys/${issued.body.id}`);

      // Every account, one a page: a walk meets this one once.
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
        const res = await api.admin('GET', `/customer-accounts?limit=1${query}`);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.data).to.have.length.at.most(1);
        seen.push(...res.body.data.map((a: { id: string }) => a.id));
        cursor = res.body.pagination.nextCursor;
        expect(res.body.pagination.hasMore).to.equal(cursor !== null);
      } while (cursor !== null);
      expect(seen.filter((s) => s === id)).to.have.length(1);
      expect(new Set(seen).size).to.equal(seen.length);

      const apps = await api.admin('GET', `/customer-accounts/${id}/apps`);
      expect(apps.body.data).to.deep.equal([
        { id: app.body.id, name: 'Listed', grants: app.body.grants, status: 'ACTIVE', redirectUris: [] },
      ]);
      const keys = await api.admin('GET', `/customer-accounts/${id}/api-keys?limit=100`);
      expect(keys.status).to.equal(200);
      const byKind = Object.fromEntries(keys.body.data.map((k: { kind: string }) => [k.kind, k]));
      expect(Object.keys(byKind).sort()).to.deep.equal(['ak', 'pk', 'sk']);
      expect(byKind.sk).to.include({ id: issued.body.id, name: 'CI' });
      expect(byKind.sk.revokedAt).to.be.a('string');
      expect(byKind.ak).to.include({ id: app.body.secretKeyId, appId: app.body.id, revokedAt: null });
      for (const secret of [issued.body.key, app.body.publishableKey, app.body.secretKey])
        expect(keys.text).to.not.include(secret);
      expect(keys.text).to.not.match(/(sk|pk|ak)_[0-9A-Za-z]{32}/);

      // An unknown account: 404; a cursor of another list: 400.
      expect((await api.admin('GET', `/customer-accounts/${randomUUID()}/apps`)).status).to.equal(404);
      expect((await api.admin('GET', `/customer-accounts/${randomUUID()}/api-keys`)).status).to.equal(404);
      const accountsCursor = (await api.admin('GET', '/customer-accounts?limit=1')).body.pagination.nextCursor;
      const foreign = await api.admin(
        'GET',
        `/customer-accounts/${id}/apps?cursor=${encodeURIComponent(accountsCursor)}`,
      );
      expect(foreign.status).to.equal(400);
    });

    it('refuses an account without a valid name (400)', async () => {
      for (const body of [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 'Acme', plan: 'gold' }]) {
        expect((await api.admin('POST', '/customer-accounts', body)).status, JSON.stringify(body)).to.equal(400);
      }
    });

    it('honours Idempotency-Key: a retried account creation makes one account', async () => {
      const key = randomUUID();
      const send = () =>
        api.request('POST', `${ADMIN}/customer-accounts`, {
          key: ADMIN_TOKEN,
          body: { name: 'Once' },
          headers: { 'idempotency-key': key },
        });
      const first = await send();
      const again = await send();
      expect([first.status, again.status]).to.deep.equal([201, 201]);
      expect(again.body.id).to.equal(first.body.id);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
    });

    it('issues a secret key shown once, which works at once with exactly its scopes', async () => {
      const id = await account();
      const res = await api.admin('POST', `/customer-accounts/${id}/api-keys`, {
        scopes: ['patient:write'],
        name: 'CI',
      });
      expect(res.status).to.equal(201);
      expect(res.body).to.have.all.keys('id', 'key', 'scopes');
      expect(res.body.id).to.match(UUID);
      expect(res.body.key).to.match(/^sk_[0-9A-Za-z]{40}$/);
      expect(res.body.scopes).to.deep.equal(['patient:write']);
      const created = await api.request('POST', '/api/platform/v1/patients', {
        key: res.body.key,
        body: buildPatient(),
      });
      expect(created.status).to.equal(201);
      expect((await api.request('GET', created.headers.get('location')!, { key: res.body.key })).status).to.equal(403);
    });

    it('refuses unknown, empty or missing scopes (400)', async () => {
      const id = await account();
      for (const body of [{ scopes: ['patient:admin'] }, { scopes: [] }, {}, { scopes: 'patient:read' }]) {
        const res = await api.admin('POST', `/customer-accounts/${id}/api-keys`, body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.code).to.equal('BAD_REQUEST');
      }
    });

    it('answers 404 for keys and apps of an unknown account', async () => {
      for (const id of [randomUUID(), 'not-a-uuid']) {
        expect(
          (await api.admin('POST', `/customer-accounts/${id}/api-keys`, { scopes: ['patient:read'] })).status,
        ).to.equal(404);
        expect(
          (await api.admin('POST', `/customer-accounts/${id}/apps`, { name: 'App', grants: GRANTS })).status,
        ).to.equal(404);
      }
    });

    it('revokes a key: 204, the key gets 401 at once, revoking again is 404', async () => {
      const id = await account();
      const issued = (await api.admin('POST', `/customer-accounts/${id}/api-keys`, { scopes: ['webhook:read'] })).body;
      expect((await api.request('GET', '/api/platform/v1/webhook-endpoints', { key: issued.key })).status).to.equal(
        200,
      );
      const revoked = await api.admin('DELETE', `/api-keys/${issued.id}`);
      expect(revoked.status).to.equal(204);
      expect(revoked.text).to.equal('');
      expect((await api.request('GET', '/api/platform/v1/webhook-endpoints', { key: issued.key })).status).to.equal(
        401,
      );
      expect((await api.admin('DELETE', `/api-keys/${issued.id}`)).status).to.equal(404);
      expect((await api.admin('DELETE', `/api-keys/${randomUUID()}`)).status).to.equal(404);
    });

    it("revoking one key leaves the account's other keys working", async () => {
      const id = await account();
      const a = (await api.admin('POST', `/customer-accounts/${id}/api-keys`, { scopes: ['webhook:read'] })).body;
      const b = (await api.admin('POST', `/customer-accounts/${id}/api-keys`, { scopes: ['webhook:read'] })).body;
      expect((await api.admin('DELETE', `/api-keys/${a.id}`)).status).to.equal(204);
      expect((await api.request('GET', '/api/platform/v1/webhook-endpoints', { key: b.key })).status).to.equal(200);
    });

    it('issues several keys for one account at the same time, each one working', async () => {
      for (let round = 0; round < 3; round++) {
        const id = await account();
        const answers = await Promise.all(
          Array.from({ length: 8 }, () =>
            api.admin('POST', `/customer-accounts/${id}/api-keys`, { scopes: ['webhook:read'] }),
          ),
        );
        expect(
          answers.map((a) => a.status),
          answers.find((a) => a.status !== 201)?.text,
        ).to.deep.equal(Array(8).fill(201));
        for (const { body } of answers)
          expect((await api.request('GET', '/api/platform/v1/webhook-endpoints', { key: body.key })).status).to.equal(
            200,
          );
      }
    });

    it('creates an app: 201 with pk_ and ak_ keys, its grants and status ACTIVE', async () => {
      const id = await account();
      const grants = { ...GRANTS, loincCodes: ['4548-4', '2345-7'], sensitivity: ['HIV', 'PSY'], lookbackDays: 365 };
      const res = await api.admin('POST', `/customer-accounts/${id}/apps`, { name: 'Glucose Coach', grants });
      expect(res.status).to.equal(201);
      expect(res.body).to.include({ name: 'Glucose Coach', status: 'ACTIVE' });
      expect(res.body.id).to.match(UUID);
      expect(res.body.publishableKey).to.match(/^pk_[0-9A-Za-z]{32,}$/);
      expect(res.body.secretKey).to.match(/^ak_[0-9A-Za-z]{32,}$/);
      expect(res.body.grants).to.deep.equal(grants);
    });

    const badGrants: [string, Record<string, unknown>][] = [
      ['an unknown confidentiality code', { confidentiality: ['N', 'X'] }],
      ['a malformed LOINC code', { loincCodes: ['glucose'] }],
      ['"*" mixed with codes', { loincCodes: ['*', '4548-4'] }],
      ['lookbackDays 0', { lookbackDays: 0 }],
      ['a fractional lookbackDays', { lookbackDays: 1.5 }],
      ['a resource type Portico does not keep', { resourceTypes: ['Claim'] }],
      ['an unknown grant', { everything: true }],
      ['a LOINC code whose check digit is wrong', { loincCodes: ['8867-3'] }],
      ['a sensitivity code v3-ActCode does not have', { sensitivity: ['HIV', 'SECRET'] }],
    ];
    for (const [what, change] of badGrants) {
      it(`refuses an app whose grants have ${what} (400)`, async () => {
        const id = await account();
        const res = await api.admin('POST', `/customer-accounts/${id}/apps`, {
          name: 'Bad',
          grants: { ...GRANTS, ...change },
        });
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('BAD_REQUEST');
      });
    }

    it('refuses a PATCH whose grants name unknown codes, and takes real ones', async () => {
      const id = await account();
      const app = (await api.admin('POST', `/customer-accounts/${id}/apps`, { name: 'Codes', grants: GRANTS })).body;
      const bad = await api.admin('PATCH', `/apps/${app.id}`, {
        status: 'ACTIVE',
        grants: { ...GRANTS, loincCodes: ['718-7', '2339-1'] },
      });
      expect(bad.status).to.equal(400);
      expect(bad.body.details.errors).to.deep.equal([
        {
          in: 'body',
          name: 'grants.loincCodes',
          detail: '2339-1 is not a LOINC code (its check digit does not match)',
        },
      ]);
      const good = await api.admin('PATCH', `/apps/${app.id}`, {
        status: 'ACTIVE',
        grants: {
          ...GRANTS,
          loincCodes: ['718-7', '2339-0', '8867-4', '85354-9', '4548-4'],
          sensitivity: ['ETH', 'SUD', 'STD'],
        },
      });
      expect(good.status, good.text).to.equal(200);
    });

    it('suspends and re-activates an app (200), and answers 404 for an unknown one', async () => {
      const id = await account();
      const app = (await api.admin('POST', `/customer-accounts/${id}/apps`, { name: 'Pausable', grants: GRANTS })).body;
      const suspended = await api.admin('PATCH', `/apps/${app.id}`, { status: 'SUSPENDED' });
      expect(suspended.status).to.equal(200);
      expect(suspended.body).to.include({ id: app.id, status: 'SUSPENDED' });
      expect(suspended.body.grants).to.deep.equal(GRANTS);
      const active = await api.admin('PATCH', `/apps/${app.id}`, {
        status: 'ACTIVE',
        grants: { ...GRANTS, lookbackDays: 30 },
      });
      expect(active.status).to.equal(200);
      expect(active.body).to.include({ status: 'ACTIVE' });
      expect(active.body.grants.lookbackDays).to.equal(30);
      expect((await api.admin('PATCH', `/apps/${app.id}`, { status: 'DELETED' })).status).to.equal(400);
      expect((await api.admin('PATCH', `/apps/${randomUUID()}`, { status: 'SUSPENDED' })).status).to.equal(404);
    });

    it('never stores a raw key, only something derived from it', async () => {
      const id = await account();
      const issued = (await api.admin('POST', `/customer-accounts/${id}/api-keys`, { scopes: ['patient:read'] })).body;
      const app = (await api.admin('POST', `/customer-accounts/${id}/apps`, { name: 'Secretive', grants: GRANTS }))
        .body;
      const documents = await api.mongo.db.collection('api_keys').find({ accountId: id }).toArray();
      expect(documents).to.have.length(3);
      const stored = JSON.stringify(documents);
      for (const key of [issued.key, app.publishableKey, app.secretKey]) {
        expect(stored).to.not.include(key);
        expect(stored).to.not.include(key.slice(3)); // nor its random part
      }
    });
  });
});
