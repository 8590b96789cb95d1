import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, withTestApi, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';

const BASE = '/api/platform/v1/webhook-endpoints';

describe('platform: webhook endpoints — If-Match preconditions', () => {
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;
  withTestApi((started) => ({ api, tenant, other } = started));

  const create = async (owner: Tenant = tenant) => {
    const res = await api.request('POST', BASE, { key: owner.key, body: buildEndpoint({ description: 'before' }) });
    expect(res.status).to.equal(201);
    return res.body as { id: string; _version: string };
  };
  const read = (id: string, owner: Tenant = tenant) => api.request('GET', `${BASE}/${id}`, { key: owner.key });
  const patch = (id: string, ifMatch: string, body: unknown = { description: 'after' }) =>
    api.request('PATCH', `${BASE}/${id}`, { key: tenant.key, body, headers: { 'if-match': ifMatch } });
  const remove = (id: string, ifMatch: string) =>
    api.request('DELETE', `${BASE}/${id}`, { key: tenant.key, headers: { 'if-match': ifMatch } });
  const expectPreconditionFailed = (res: Response, what: string) => {
    expect(res.status, what).to.equal(412);
    expect(res.headers.get('content-type'), what).to.match(/^application\/problem\+json/);
    expect(res.body, what).to.include({ code: 'PRECONDITION_FAILED', status: 412, retryable: false });
    expect(res.headers.get('etag'), what).to.equal(null);
  };
  const expectUntouched = async (id: string, version = '1') => {
    const res = await read(id);
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ _version: version, description: 'before' });
  };

  describe('PATCH', () => {
    it('applies the change when the strong tag matches', async () => {
      const { id } = await create();
      const res = await patch(id, '"1"');
      expect(res.status).to.equal(200);
      expect(res.headers.get('etag')).to.equal('"2"');
      expect(res.body).to.include({ description: 'after', _version: '2' });
    });

    it('applies the change for If-Match: *', async () => {
      const { id } = await create();
      const res = await patch(id, '*');
      expect(res.status).to.equal(200);
      expect(res.body._version).to.equal('2');
    });

    it('applies the change when a list of tags contains the current one', async () => {
      const { id } = await create();
      for (const [header, version] of [
        ['"7", "1"', '2'],
        ['W/"2","2"', '3'],
        ['"9",   "3"  , "4"', '4'],
      ] as const) {
        const res = await patch(id, header, { description: `v${version}` });
        expect(res.status, header).to.equal(200);
        expect(res.body._version, header).to.equal(version);
      }
    });

    it('never matches a weak tag: 412 and nothing changes', async () => {
      const { id } = await create();
      for (const header of ['W/"1"', 'W/"1", W/"2"', '"5", W/"1"'])
        expectPreconditionFailed(await patch(id, header), header);
      await expectUntouched(id);
    });

    it('refuses a stale tag with 412, leaving the newer version in place', async () => {
      const { id } = await create();
      expect((await patch(id, '"1"', { description: 'before', status: 'PAUSED' })).status).to.equal(200);
      const res = await patch(id, '"1"');
      expectPreconditionFailed(res, 'stale');
      const now = await read(id);
      expect(now.body).to.include({ _version: '2', status: 'PAUSED', description: 'before' });
    });

    it('refuses tags of other versions ("2", "01", "") with 412', async () => {
      const { id } = await create();
      for (const header of ['"2"', '"01"', '""']) expectPreconditionFailed(await patch(id, header), header);
      await expectUntouched(id);
    });

    it('answers a malformed If-Match with 400 naming the header, changing nothing', async () => {
      const { id } = await create();
      for (const header of ['abc', '1', '"1', 'W/1', '"1" "2"', 'W/ "1"']) {
        const res = await patch(id, header);
        expect(res.status, header).to.equal(400);
        expect(res.body.code, header).to.equal('BAD_REQUEST');
        expect(
          res.body.details.errors.map((e: { in: string; name: string }) => `${e.in}:${e.name}`),
          header,
        ).to.include('header:If-Match');
      }
      await expectUntouched(id);
    });

    it('checks existence first: unknown, deleted and foreign endpoints are 404 even with If-Match', async () => {
      const deleted = await create();
      expect((await api.request('DELETE', `${BASE}/${deleted.id}`, { key: tenant.key })).status).to.equal(204);
      const foreign = await create(other);
      for (const id of [randomUUID(), deleted.id, foreign.id]) {
        for (const header of ['"1"', '*', 'W/"1"', '"99"']) {
          const res = await patch(id, header);
          expect(res.status, `${id} ${header}`).to.equal(404);
          expect(res.body.code).to.equal('NOT_FOUND');
        }
      }
      const untouched = await read(foreign.id, other);
      expect(untouched.body).to.include({ _version: '1', description: 'before' });
    });

    it('lets {} through a matching tag without changing the version, and still checks a stale one', async () => {
      const { id } = await create();
      const same = await patch(id, '"1"', {});
      expect(same.status).to.equal(200);
      expect(same.body._version).to.equal('1');
      expectPreconditionFailed(await patch(id, '"3"', {}), '{} with a stale tag');
    });
  });

  describe('DELETE', () => {
    it('deletes when the strong tag matches', async () => {
      const { id } = await create();
      expect((await remove(id, '"1"')).status).to.equal(204);
      expect((await read(id)).status).to.equal(404);
    });

    it('deletes for If-Match: * and for a list containing the current tag', async () => {
      const a = await create();
      const b = await create();
      expect((await remove(a.id, '*')).status).to.equal(204);
      expect((await remove(b.id, '"4", "1", W/"1"')).status).to.equal(204);
      expect((await read(a.id)).status).to.equal(404);
      expect((await read(b.id)).status).to.equal(404);
    });

    it('refuses a weak tag with 412 and keeps the endpoint', async () => {
      const { id } = await create();
      expectPreconditionFailed(await remove(id, 'W/"1"'), 'weak');
      await expectUntouched(id);
    });

    it('refuses a stale tag with 412 and keeps the endpoint', async () => {
      const { id } = await create();
      expect((await patch(id, '"1"', { description: 'before', status: 'PAUSED' })).status).to.equal(200);
      expectPreconditionFailed(await remove(id, '"1"'), 'stale');
      expect((await read(id)).body._version).to.equal('2');
      expect((await remove(id, '"2"')).status).to.equal(204);
    });

    it('answers a malformed If-Match with 400 and keeps the endpoint', async () => {
      const { id } = await create();
      for (const header of ['abc', '"1', 'W/1']) {
        const res = await remove(id, header);
        expect(res.status, header).to.equal(400);
        expect(
          res.body.details.errors.map((e: { name: string }) => e.name),
          header,
        ).to.include('If-Match');
      }
      await expectUntouched(id);
    });

    it('checks existence first: unknown, deleted and foreign endpoints are 404 even with If-Match', async () => {
      const deleted = await create();
      expect((await remove(deleted.id, '"1"')).status).to.equal(204);
      const foreign = await create(other);
      for (const id of [randomUUID(), deleted.id, foreign.id]) {
        for (const header of ['"1"', '*', 'W/"1"', '"2"']) {
          const res = await remove(id, header);
          expect(res.status, `${id} ${header}`).to.equal(404);
          expect(res.body.code).to.equal('NOT_FOUND');
        }
      }
      expect((await read(foreign.id, other)).status).to.equal(200);
    });
  });
});

describe('platform: webhook endpoints — entity tags with commas', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));

  it('accepts If-Match tags whose opaque part contains a comma', async () => {
    const created = await api.request('POST', BASE, { key: tenant.key, body: buildEndpoint() });
    const res = await api.request('PATCH', `${BASE}/${created.body.id}`, {
      key: tenant.key,
      body: { description: 'x' },
      headers: { 'if-match': '"a,b", "1"' },
    });
    expect(res.status).to.equal(200);
  });
});
