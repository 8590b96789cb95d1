import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { Redis } from 'ioredis';
import { TestApi, withTestApi, type Tenant } from '../../../../testkit/api.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { eventsOf } from '../../../../testkit/events.js';
import { buildEndpoint, buildPatient } from '../../../../testkit/factories.js';
import { testRedisUrl } from '../../../../testkit/services.js';
import { IDEMPOTENCY_RECORDS } from '../../../../api/src/shared/http/idempotency-store.js';

const PATIENTS = '/api/platform/v1/patients';
const DAY = 24 * 60 * 60 * 1000;

const newKey = () => `idem-${randomUUID()}`;

const create = (api: TestApi, credential: string, idempotencyKey: string, body: unknown = buildPatient()) =>
  api.request('POST', PATIENTS, { key: credential, body, headers: { 'idempotency-key': idempotencyKey } });

const countPatients = (api: TestApi, tenant: Tenant) =>
  api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId });

/** POST /patients over node:http, with Idempotency-Key sent as separate header lines, one per value. */
function createWithKeyLines(
  api: TestApi,
  credential: string,
  values: string[],
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(api.url + PATIENTS, { method: 'POST' }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.setHeader('Authorization', `Bearer ${credential}`);
    req.setHeader('Content-Type', 'application/json');
    req.setHeader('Idempotency-Key', values);
    req.on('error', reject);
    req.end(JSON.stringify(buildPatient()));
  });
}

for (const redis of [false, true]) {
  describe(`http: idempotency (${redis ? 'Redis' : 'in-process'} store)`, () => {
    let api: TestApi;
    let tenant: Tenant;
    withTestApi((started) => ({ api, tenant } = started), { redis });

    const post = (idempotencyKey: string, body?: unknown) => create(api, tenant.key, idempotencyKey, body);
    const count = () => countPatients(api, tenant);

    it('replays the stored outcome byte for byte, creating nothing new', async () => {
      const key = newKey();
      const body = buildPatient();
      const before = await count();
      const first = await post(key, body);
      expect(first.status).to.equal(201);
      expect(first.headers.get('idempotent-replayed')).to.equal(null);
      expect(await count()).to.equal(before + 1);

      const again = await api.request('POST', PATIENTS, {
        key: tenant.key,
        body,
        headers: { 'idempotency-key': key, 'x-request-id': 'replay-1' },
      });
      expect(again.status).to.equal(201);
      expect(again.text).to.equal(first.text);
      for (const header of ['etag', 'location', 'content-type'])
        expect(again.headers.get(header), header).to.equal(first.headers.get(header));
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.headers.get('x-request-id')).to.equal('replay-1');
      expect(await count()).to.equal(before + 1);

      const read = await api.request('GET', first.headers.get('location')!, { key: tenant.key });
      expect(read.status).to.equal(200);
      expect(read.body.id).to.equal(first.body.id);
      const events = (await eventsOf(api.mongo.db, tenant.accountId)).filter((e) => e.data.patientId === first.body.id);
      expect(events.map((e) => e.type)).to.deep.equal(['patient.created']);
    });

    it('executes 20 parallel identical requests exactly once; the others replay or are told to retry', async () => {
      const key = newKey();
      const body = buildPatient();
      const before = await count();
      const answers = await Promise.all(Array.from({ length: 20 }, () => post(key, body)));
      const created = answers.filter((a) => a.status === 201);
      const busy = answers.filter((a) => a.status === 409);
      expect(created.length + busy.length, answers.map((a) => a.status).join()).to.equal(20);
      expect(created).to.not.be.empty;
      expect(new Set(created.map((a) => a.text)).size).to.equal(1);
      for (const answer of busy) {
        expect(answer.body).to.include({ code: 'IDEMPOTENCY_KEY_IN_USE', status: 409, retryable: true });
        expect(answer.headers.get('retry-after')).to.equal('1');
      }
      expect(await count()).to.equal(before + 1);
      const retry = await post(key, body);
      expect(retry.status).to.equal(201);
      expect(retry.text).to.equal(created[0]!.text);
    });

    it('refuses the same key with a different body (422) and keeps replaying the original', async () => {
      const key = newKey();
      const body = buildPatient();
      const first = await post(key, body);
      const before = await count();
      const other = await post(key, buildPatient());
      expect(other.status).to.equal(422);
      expect(other.body).to.include({ code: 'IDEMPOTENCY_KEY_REUSED', retryable: false });
      expect(await count()).to.equal(before);
      const again = await post(key, body);
      expect(again.status).to.equal(201);
      expect(again.text).to.equal(first.text);
    });

    it('refuses the same key on another path or method (422), changing nothing', async () => {
      const key = newKey();
      const first = await post(key);
      expect(first.status).to.equal(201);
      const endpoint = await api.request('POST', '/api/platform/v1/webhook-endpoints', {
        key: tenant.key,
        body: buildEndpoint(),
        headers: { 'idempotency-key': key },
      });
      expect(endpoint.status).to.equal(422);
      expect(endpoint.body.code).to.equal('IDEMPOTENCY_KEY_REUSED');
      const removal = await api.request('DELETE', `${PATIENTS}/${first.body.id}`, {
        key: tenant.key,
        headers: { 'idempotency-key': key },
      });
      expect(removal.status).to.equal(422);
      expect((await api.request('GET', `${PATIENTS}/${first.body.id}`, { key: tenant.key })).status).to.equal(200);
      expect((await api.request('GET', '/api/platform/v1/webhook-endpoints', { key: tenant.key })).body.data).to.be
        .empty;
    });

    const invalid: [string, string][] = [
      ['an empty key', ''],
      ['empty quotes', '""'],
      ['256 characters', 'k'.repeat(256)],
      ['a space', 'has space'],
      ['a tab', 'has\ttab'],
      ['a non-ASCII character', 'caf\u00e9'],
    ];
    for (const [what, key] of invalid) {
      it(`answers a key with ${what} with 400, creating nothing`, async () => {
        const before = await count();
        const res = await post(key);
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('BAD_REQUEST');
        expect(res.body.details.errors[0]).to.include({ in: 'header', name: 'Idempotency-Key' });
        expect(await count()).to.equal(before);
      });
    }

    it('accepts a key of 255 visible ASCII characters, all of them significant', async () => {
      const key = `${randomUUID()}!~#`.padEnd(255, 'k');
      const body = buildPatient();
      expect((await post(key, body)).status).to.equal(201);
      expect((await post(key, body)).headers.get('idempotent-replayed')).to.equal('true');
      const sibling = await post(`${key.slice(0, 254)}j`, body);
      expect(sibling.status).to.equal(201);
      expect(sibling.headers.get('idempotent-replayed')).to.equal(null);
    });

    it('answers the header sent twice with 400, creating nothing', async () => {
      const before = await count();
      const twice = await createWithKeyLines(api, tenant.key, [newKey(), newKey()]);
      expect(twice.status).to.equal(400);
      expect(twice.body.details.errors[0]).to.include({ in: 'header', name: 'Idempotency-Key' });
      expect(await count()).to.equal(before);
      expect((await createWithKeyLines(api, tenant.key, [newKey()])).status).to.equal(201);
    });

    it('treats a quoted key as the key itself', async () => {
      const key = newKey();
      const body = buildPatient();
      const first = await post(key, body);
      const quoted = await post(`"${key}"`, body);
      expect(quoted.status).to.equal(201);
      expect(quoted.headers.get('idempotent-replayed')).to.equal('true');
      expect(quoted.text).to.equal(first.text);
    });

    it('does not store requests refused before execution (400, 415): a corrected retry runs', async () => {
      const key = newKey();
      const before = await count();
      expect((await post(key, { ...buildPatient(), givenName: '' })).status).to.equal(400);
      const wrongType = await api.request('POST', PATIENTS, {
        key: tenant.key,
        raw: JSON.stringify(buildPatient()),
        headers: { 'idempotency-key': key, 'content-type': 'text/plain' },
      });
      expect(wrongType.status).to.equal(415);
      const fixed = await post(key);
      expect(fixed.status).to.equal(201);
      expect(fixed.headers.get('idempotent-replayed')).to.equal(null);
      expect(await count()).to.equal(before + 1);
    });

    it('replays a DELETE, and an operation-decided 404', async () => {
      const patient = (await post(newKey())).body;
      const key = newKey();
      const del = (k: string) =>
        api.request('DELETE', `${PATIENTS}/${patient.id}`, { key: tenant.key, headers: { 'idempotency-key': k } });
      expect((await del(key)).status).to.equal(204);
      const again = await del(key);
      expect(again.status).to.equal(204);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');

      const other = newKey();
      const gone = await del(other);
      expect(gone.status).to.equal(404);
      const goneAgain = await del(other);
      expect(goneAgain.status).to.equal(404);
      expect(goneAgain.headers.get('idempotent-replayed')).to.equal('true');
      expect(goneAgain.text).to.equal(gone.text);
    });

    it('scopes keys per credential: another key of the same account executes separately', async () => {
      const second = await api.keyFor(tenant.accountId, ['patient:write']);
      const key = newKey();
      const body = buildPatient();
      const before = await count();
      const mine = await post(key, body);
      const theirs = await create(api, second.key, key, body);
      expect([mine.status, theirs.status]).to.deep.equal([201, 201]);
      expect(theirs.headers.get('idempotent-replayed')).to.equal(null);
      expect(theirs.body.id).to.not.equal(mine.body.id);
      expect(await count()).to.equal(before + 2);
    });

    it('ignores the header on GET', async () => {
      const key = newKey();
      const created = await post(key);
      for (const header of [key, 'not a valid key']) {
        const read = await api.request('GET', `${PATIENTS}/${created.body.id}`, {
          key: tenant.key,
          headers: { 'idempotency-key': header },
        });
        expect(read.status, header).to.equal(200);
        expect(read.headers.get('idempotent-replayed')).to.equal(null);
        expect(read.body.id).to.equal(created.body.id);
      }
    });

    describe('the 24-hour window', () => {
      let timed: TestApi;
      let owner: Tenant;
      const clock = new ManualClock();

      before(async () => {
        timed = await TestApi.start({ redis, clock });
        owner = await timed.tenant();
      });
      after(() => timed.close());

      it('replays until 24 hours have passed, then executes anew', async () => {
        const key = newKey();
        const body = buildPatient();
        const first = await create(timed, owner.key, key, body);
        expect(first.status).to.equal(201);

        clock.advance(DAY - 1000);
        const replayed = await create(timed, owner.key, key, body);
        expect(replayed.headers.get('idempotent-replayed')).to.equal('true');
        expect(replayed.text).to.equal(first.text);
        expect(await countPatients(timed, owner)).to.equal(1);

        clock.advance(2000);
        const fresh = await create(timed, owner.key, key, body);
        expect(fresh.status).to.equal(201);
        expect(fresh.headers.get('idempotent-replayed')).to.equal(null);
        expect(fresh.body.id).to.not.equal(first.body.id);
        expect(await countPatients(timed, owner)).to.equal(2);
      });
    });
  });
}

describe('http: idempotency — what the store holds and what a replay repeats (with Redis)', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started), { redis: true });

  it('stores outcomes sealed: the store never holds the secret a replay returns', async () => {
    const key = newKey();
    const body = buildEndpoint();
    const first = await api.request('POST', '/api/platform/v1/webhook-endpoints', {
      key: tenant.key,
      body,
      headers: { 'idempotency-key': key },
    });
    const replay = await api.request('POST', '/api/platform/v1/webhook-endpoints', {
      key: tenant.key,
      body,
      headers: { 'idempotency-key': key },
    });
    expect(first.status).to.equal(201);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.text).to.equal(first.text); // the secret comes back byte-for-byte…
    const records = await api.mongo.db.collection(IDEMPOTENCY_RECORDS).find({ state: 'done' }).toArray();
    expect(records.length).to.be.greaterThan(0);
    for (const record of records) {
      const stored = JSON.stringify(record);
      expect(stored).to.not.include(first.body.secret); // …but the store cannot read it
      expect(stored).to.not.include(first.body.id);
    }
    const redis = new Redis(testRedisUrl());
    try {
      expect(await redis.keys('portico:idem:*')).to.deep.equal([]); // and Redis holds no copy at all
    } finally {
      redis.disconnect();
    }
  });

  it('replays Cache-Control and Vary with the stored outcome', async () => {
    const key = newKey();
    const body = buildPatient();
    const first = await create(api, tenant.key, key, body);
    const replay = await create(api, tenant.key, key, body);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    for (const header of ['cache-control', 'vary', 'etag', 'location', 'content-type'])
      expect(replay.headers.get(header), header).to.equal(first.headers.get(header));
  });
});
