import { expect } from 'chai';
import { TestApi, withTestApi, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';

const BASE = '/api/platform/v1/webhook-endpoints';
const PROBLEM_FIELDS = ['type', 'title', 'status', 'detail', 'instance', 'code', 'details', 'retryable'];

function expectProblem(res: Response, status: number, code: string, instance: string): void {
  expect(res.status, res.text).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(res.body).to.have.all.keys(...PROBLEM_FIELDS);
  expect(res.body).to.include({
    status,
    code,
    instance,
    retryable: false,
    type: `https://portico.dev/problems/${code.toLowerCase().replaceAll('_', '-')}`,
  });
}

describe('platform: webhook endpoints — input validation', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));

  const create = (body: unknown) => api.request('POST', BASE, { key: tenant.key, body });
  const send = (method: string, path: string, raw: string | Buffer, contentType?: string) =>
    api.request(method, path, { key: tenant.key, raw, headers: contentType ? { 'content-type': contentType } : {} });
  /** What the tenant can see through the list, and what is stored at all (live or not). */
  const footprint = async () => ({
    listed: (await api.request('GET', `${BASE}?limit=100`, { key: tenant.key })).body.data.length as number,
    stored: await api.mongo.db.collection('webhook_endpoints').countDocuments({ accountId: tenant.accountId }),
  });

  describe('eventTypes on create', () => {
    const refused: [string, unknown][] = [
      ['"*" mixed with other types', ['*', 'patient.created']],
      ['a duplicated type', ['patient.created', 'patient.created']],
      ['a duplicated "*"', ['*', '*']],
      ['an unknown type', ['patient.updated']],
      ['a type in the wrong case', ['Patient.Created']],
      ['an empty array', []],
      ['a string instead of an array', 'patient.created'],
      ['a number in the array', [42]],
      ['null', null],
    ];
    for (const [what, eventTypes] of refused) {
      it(`refuses ${what} with a 400 naming eventTypes, creating nothing`, async () => {
        const before = await footprint();
        const res = await create(buildEndpoint({ eventTypes }));
        expectProblem(res, 400, 'BAD_REQUEST', BASE);
        expect(res.body.details.errors.map((e: { name: string }) => e.name.split('.')[0])).to.include('eventTypes');
        expect(await footprint()).to.deep.equal(before);
      });
    }
  });

  describe('create bodies', () => {
    const invalid: [string, Record<string, unknown>, string][] = [
      ['a missing url', { url: undefined }, 'url'],
      ['a missing eventTypes', { eventTypes: undefined }, 'eventTypes'],
      ['a number as url', { url: 42 }, 'url'],
      ['null as url', { url: null }, 'url'],
      ['an array as url', { url: ['https://a.example.test/'] }, 'url'],
      ['a number as description', { description: 42 }, 'description'],
      ['a description over 500 characters', { description: 'x'.repeat(501) }, 'description'],
      ['an unknown property', { retries: 3 }, 'retries'],
      ['a client-chosen id', { id: '5f1d7c1e-0000-4000-8000-000000000000' }, 'id'],
      ['a client-chosen secret', { secret: 'whsec_mine' }, 'secret'],
      ['a client-chosen status', { status: 'ACTIVE' }, 'status'],
      ['a client-chosen consecutiveFailures', { consecutiveFailures: 0 }, 'consecutiveFailures'],
      ['an operator object as url', { url: { $gt: '' } }, 'url'],
      ['an operator object as description', { description: { $ne: null } }, 'description'],
      ['a $where key', { $where: 'sleep(1000)' }, '$where'],
      ['a dotted key', { 'url.$': 'x' }, 'url.$'],
    ];
    for (const [what, change, field] of invalid) {
      it(`refuses ${what} with a 400 naming ${field}, creating nothing`, async () => {
        const before = await footprint();
        const res = await create({ ...buildEndpoint(), ...change });
        expectProblem(res, 400, 'BAD_REQUEST', BASE);
        expect(res.body.details.errors.map((e: { name: string }) => e.name)).to.include(field);
        expect(res.body.details.errors.every((e: { in: string }) => e.in === 'body')).to.equal(true);
        expect(await footprint()).to.deep.equal(before);
      });
    }

    it('refuses a prototype-polluting property', async () => {
      const before = await footprint();
      const raw = JSON.stringify(buildEndpoint()).replace(/^\{/, '{"__proto__":{"status":"DISABLED"},');
      expectProblem(await send('POST', BASE, raw, 'application/json'), 400, 'BAD_REQUEST', BASE);
      expect(await footprint()).to.deep.equal(before);
    });

    it('accepts a description of exactly 500 characters', async () => {
      const res = await create(buildEndpoint({ description: 'd'.repeat(500) }));
      expect(res.status).to.equal(201);
      expect(res.body.description).to.have.length(500);
    });

    it('refuses bodies that are not JSON objects, and an empty body', async () => {
      const before = await footprint();
      for (const raw of ['[]', '"text"', 'null', '42', 'true', '']) {
        expectProblem(await send('POST', BASE, raw, 'application/json'), 400, 'BAD_REQUEST', BASE);
      }
      expect(await footprint()).to.deep.equal(before);
    });

    it('refuses malformed JSON with 400', async () => {
      const before = await footprint();
      for (const raw of [
        '{"url":',
        '{url: "https://a.example.test/"}',
        '{"url":"https://a.example.test/",}',
        "{'a':1}",
      ]) {
        expectProblem(await send('POST', BASE, raw, 'application/json'), 400, 'BAD_REQUEST', BASE);
      }
      expect(await footprint()).to.deep.equal(before);
    });

    it('refuses other media types with 415, including merge-patch on create', async () => {
      const before = await footprint();
      const json = JSON.stringify(buildEndpoint());
      for (const type of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/xml',
        'application/merge-patch+json',
      ]) {
        expectProblem(await send('POST', BASE, json, type), 415, 'UNSUPPORTED_MEDIA_TYPE', BASE);
      }
      expectProblem(await send('POST', BASE, Buffer.from(json)), 415, 'UNSUPPORTED_MEDIA_TYPE', BASE);
      expect(await footprint()).to.deep.equal(before);
    });

    it('accepts application/json with a charset parameter', async () => {
      const res = await send('POST', BASE, JSON.stringify(buildEndpoint()), 'application/json; charset=utf-8');
      expect(res.status).to.equal(201);
    });

    it('refuses a body over 1 MiB with 413', async () => {
      const before = await footprint();
      const raw = JSON.stringify(buildEndpoint({ description: 'x'.repeat(1024 * 1024 + 16) }));
      expectProblem(await send('POST', BASE, raw, 'application/json'), 413, 'PAYLOAD_TOO_LARGE', BASE);
      expect(await footprint()).to.deep.equal(before);
    });
  });

  describe('update bodies', () => {
    let id: string;
    let path: string;
    let original: Record<string, unknown>;

    before(async () => {
      const created = await create(buildEndpoint({ description: 'original' }));
      id = created.body.id;
      path = `${BASE}/${id}`;
      original = (await api.request('GET', path, { key: tenant.key })).body;
    });
    const unchanged = async () =>
      expect((await api.request('GET', path, { key: tenant.key })).body).to.deep.equal(original);
    const patch = (body: unknown) =>
      api.request('PATCH', path, {
        key: tenant.key,
        body,
        headers: { 'content-type': 'application/merge-patch+json' },
      });

    const invalid: [string, unknown, string][] = [
      ['status DISABLED (only the delivery system sets it)', { status: 'DISABLED' }, 'status'],
      ['an unknown status', { status: 'paused' }, 'status'],
      ['consecutiveFailures', { consecutiveFailures: 0 }, 'consecutiveFailures'],
      ['secret', { secret: 'whsec_x' }, 'secret'],
      ['id', { id: '5f1d7c1e-0000-4000-8000-000000000000' }, 'id'],
      ['_version', { _version: '9' }, '_version'],
      ['createdAt', { createdAt: '2020-01-01T00:00:00.000Z' }, 'createdAt'],
      ['lastSuccessfulDeliveryAt', { lastSuccessfulDeliveryAt: null }, 'lastSuccessfulDeliveryAt'],
      ['resourceType', { resourceType: 'WebhookEndpoint' }, 'resourceType'],
      ['an empty eventTypes', { eventTypes: [] }, 'eventTypes'],
      ['eventTypes mixing "*"', { eventTypes: ['*', 'patient.deleted'] }, 'eventTypes'],
      ['an unknown event type', { eventTypes: ['everything'] }, 'eventTypes'],
      ['null eventTypes', { eventTypes: null }, 'eventTypes'],
      ['null url', { url: null }, 'url'],
      ['null status', { status: null }, 'status'],
      ['a description over 500 characters', { description: 'x'.repeat(501) }, 'description'],
      ['an operator object', { description: { $set: { status: 'DISABLED' } } }, 'description'],
      ['a $where key', { $where: '1' }, '$where'],
    ];
    for (const [what, body, field] of invalid) {
      it(`refuses ${what} with a 400 naming ${field}, changing nothing`, async () => {
        const res = await patch(body);
        expectProblem(res, 400, 'BAD_REQUEST', path);
        expect(res.body.details.errors.map((e: { name: string }) => e.name.split('.')[0])).to.include(field);
        await unchanged();
      });
    }

    it('refuses non-object, empty and malformed bodies with 400', async () => {
      for (const raw of ['[]', '"x"', 'null', '7', '', '{"description":']) {
        expectProblem(await send('PATCH', path, raw, 'application/merge-patch+json'), 400, 'BAD_REQUEST', path);
      }
      await unchanged();
    });

    it('refuses other media types with 415', async () => {
      for (const type of ['text/plain', 'application/json-patch+json', 'application/x-www-form-urlencoded']) {
        expectProblem(await send('PATCH', path, '{"description":"x"}', type), 415, 'UNSUPPORTED_MEDIA_TYPE', path);
      }
      await unchanged();
    });

    it('refuses a body over 1 MiB with 413', async () => {
      const raw = JSON.stringify({ description: 'y'.repeat(1024 * 1024 + 16) });
      expectProblem(await send('PATCH', path, raw, 'application/merge-patch+json'), 413, 'PAYLOAD_TOO_LARGE', path);
      await unchanged();
    });
  });
});
