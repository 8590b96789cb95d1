import { expect } from 'chai';
import { TestApi, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';
import { CursorCodec } from '../../../../api/src/shared/http/cursor.js';

const BASE = '/api/platform/v1/webhook-endpoints';

interface Listed {
  id: string;
  createdAt: string;
}

/** Creates `count` endpoints in parallel batches (so that some share a createdAt millisecond). */
async function createMany(api: TestApi, tenant: Tenant, count: number, batch = 20): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < count; done += batch) {
    const size = Math.min(batch, count - done);
    const responses = await Promise.all(
      Array.from({ length: size }, () => api.request('POST', BASE, { key: tenant.key, body: buildEndpoint() })),
    );
    for (const res of responses) {
      expect(res.status, res.text).to.equal(201);
      ids.push(res.body.id);
    }
  }
  return ids;
}

function expectNewestFirst(items: Listed[]): void {
  for (let i = 1; i < items.length; i++) {
    const [a, b] = [items[i - 1]!, items[i]!];
    const ordered = a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id);
    expect(ordered, `${a.createdAt} ${a.id} before ${b.createdAt} ${b.id}`).to.equal(true);
  }
}

describe('platform: webhook endpoints — list and pagination', () => {
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;
  let ids: string[];
  let firstCursor: string;

  before(async () => {
    api = await TestApi.start();
    [tenant, other] = await Promise.all([api.tenant(), api.tenant()]);
    ids = await createMany(api, tenant, 57);
    await createMany(api, other, 3);
    firstCursor = (await list(tenant, '?limit=10')).body.pagination.nextCursor;
  });
  after(() => api.close());

  const list = (t: Tenant, query = '') => api.request('GET', `${BASE}${query}`, { key: t.key });
  const walk = async (t: Tenant, limit?: number, between?: () => Promise<unknown>) => {
    const pages: Response[] = [];
    let cursor: string | null = null;
    do {
      const params = new URLSearchParams({
        ...(limit !== undefined && { limit: String(limit) }),
        ...(cursor !== null && { cursor }),
      });
      const page = await list(t, `?${params.toString()}`);
      expect(page.status, page.text).to.equal(200);
      pages.push(page);
      cursor = page.body.pagination.nextCursor;
      if (cursor !== null && between) await between();
    } while (cursor !== null);
    return { pages, items: pages.flatMap((p) => p.body.data as Listed[]) };
  };

  it('walks every endpoint exactly once, newest first, ten at a time', async () => {
    const { pages, items } = await walk(tenant, 10);
    expect(pages.map((p) => p.body.data.length)).to.deep.equal([10, 10, 10, 10, 10, 7]);
    for (const page of pages.slice(0, -1)) {
      expect(page.body.pagination.hasMore).to.equal(true);
      expect(page.body.pagination.nextCursor).to.be.a('string').that.is.not.empty;
    }
    expect(pages.at(-1)!.body.pagination).to.deep.equal({ nextCursor: null, hasMore: false });
    expect(items.map((e) => e.id)).to.have.members(ids);
    expect(new Set(items.map((e) => e.id)).size).to.equal(57);
    expectNewestFirst(items);
  });

  it('pages 25 at a time by default', async () => {
    const { pages, items } = await walk(tenant);
    expect(pages.map((p) => p.body.data.length)).to.deep.equal([25, 25, 7]);
    expect(items.map((e) => e.id)).to.have.members(ids);
  });

  it('lists full representations without the secret, and a self link that reproduces the page', async () => {
    const page = await list(tenant, `?limit=5&cursor=${encodeURIComponent(firstCursor)}`);
    expect(page.body._links.self.href)
      .to.be.a('string')
      .and.match(/^\/api\/platform\/v1\/webhook-endpoints/);
    const again = await api.request('GET', page.body._links.self.href, { key: tenant.key });
    expect(again.body.data).to.deep.equal(page.body.data);
    const one = page.body.data[0];
    expect(one).to.not.have.property('secret');
    expect(one).to.deep.equal((await api.request('GET', `${BASE}/${one.id}`, { key: tenant.key })).body);
  });

  it('returns every pre-existing endpoint exactly once while endpoints are being created during the walk', async () => {
    const t = await api.tenant();
    const before = await createMany(api, t, 30, 10);
    const { items } = await walk(t, 7, () => createMany(api, t, 3, 3));
    const seen = items.map((e) => e.id);
    expect(new Set(seen).size, 'no duplicates').to.equal(seen.length);
    for (const id of before)
      expect(
        seen.filter((s) => s === id),
        id,
      ).to.have.length(1);
    expectNewestFirst(items);
  });

  it('keeps the walk intact when creates race with each page fetch', async () => {
    const t = await api.tenant();
    const before = await createMany(api, t, 24, 12);
    const pages: Listed[][] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const [page] = await Promise.all([list(t, query), createMany(api, t, 2, 2)]);
      pages.push(page.body.data);
      cursor = page.body.pagination.nextCursor;
    } while (cursor !== null);
    const seen = pages.flat().map((e) => e.id);
    expect(new Set(seen).size, 'no duplicates').to.equal(seen.length);
    for (const id of before)
      expect(
        seen.filter((s) => s === id),
        id,
      ).to.have.length(1);
  });

  it('skips endpoints deleted during the walk and still returns every other one once', async () => {
    const t = await api.tenant();
    const created = await createMany(api, t, 20, 10);
    const doomed = created.slice(0, 6);
    let round = 0;
    const { items } = await walk(t, 4, async () => {
      const id = doomed[round++];
      if (id) expect((await api.request('DELETE', `${BASE}/${id}`, { key: t.key })).status).to.equal(204);
    });
    const seen = items.map((e) => e.id);
    expect(new Set(seen).size).to.equal(seen.length);
    for (const id of created.filter((c) => !doomed.includes(c)))
      expect(
        seen.filter((s) => s === id),
        id,
      ).to.have.length(1);
  });

  it("never lists another account's endpoints", async () => {
    const mine = (await walk(tenant, 100)).items.map((e) => e.id);
    const theirs = (await walk(other, 100)).items.map((e) => e.id);
    expect(theirs).to.have.length(3);
    expect(mine.filter((id) => theirs.includes(id))).to.be.empty;
  });

  it('accepts limit 1 and 100', async () => {
    const one = await list(tenant, '?limit=1');
    expect(one.status).to.equal(200);
    expect(one.body.data).to.have.length(1);
    expect(one.body.pagination.hasMore).to.equal(true);
    const hundred = await list(tenant, '?limit=100');
    expect(hundred.body.data).to.have.length(57);
    expect(hundred.body.pagination).to.deep.equal({ nextCursor: null, hasMore: false });
  });

  for (const query of [
    'limit=0',
    'limit=101',
    'limit=-1',
    'limit=1.5',
    'limit=abc',
    'limit=1e1',
    'limit=',
    'limit=10&limit=10',
    'limit=%2B5',
    'limit=0x0A',
    'limit=%2010',
    'limit=99999999999',
  ]) {
    it(`refuses ${query} with 400 naming limit (never clamped)`, async () => {
      const res = await list(tenant, `?${query}`);
      expect(res.status, res.text).to.equal(400);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(res.body).to.include({ code: 'BAD_REQUEST', status: 400 });
      expect(res.body.details.errors.map((e: { in: string; name: string }) => `${e.in}:${e.name}`)).to.include(
        'query:limit',
      );
    });
  }

  describe('cursors', () => {
    const flip = (s: string, at: number) => s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1);
    const expectCursorRefused = async (t: Tenant, cursor: string, what: string) => {
      const res = await list(t, `?limit=10&cursor=${encodeURIComponent(cursor)}`);
      expect(res.status, `${what}: ${res.text}`).to.equal(400);
      expect(res.body.code, what).to.equal('BAD_REQUEST');
      expect(
        res.body.details.errors.map((e: { name: string }) => e.name),
        what,
      ).to.include('cursor');
    };

    it('refuses tampered, truncated and invented cursors with 400', async () => {
      const [payload, signature] = firstCursor.split('.') as [string, string];
      const tampered: [string, string][] = [
        ['a flipped payload character', `${flip(payload, 5)}.${signature}`],
        ['a flipped signature character', `${payload}.${flip(signature, 3)}`],
        ['a truncated cursor', firstCursor.slice(0, -4)],
        ['a cursor without its signature', payload],
        ['an extra segment', `${firstCursor}.x`],
        ['random base64', Buffer.from('{"c":"2030-01-01T00:00:00.000Z","i":"z"}').toString('base64url')],
        ['a.b', 'a.b'],
        ['an empty string', ''],
        ['only a dot', '.'],
        [
          'a re-encoded payload with the old signature',
          `${Buffer.from(Buffer.from(payload, 'base64url').toString().replace(/"i":"/, '"i":"f')).toString('base64url')}.${signature}`,
        ],
      ];
      for (const [what, cursor] of tampered) await expectCursorRefused(tenant, cursor, what);
    });

    it('refuses a cursor issued to another account', async () => {
      const theirs = (await list(other, '?limit=1')).body.pagination.nextCursor;
      expect(theirs).to.be.a('string');
      await expectCursorRefused(tenant, theirs, 'foreign cursor');
    });

    it('refuses a correctly signed cursor of another route or with a bogus position', async () => {
      const codec = new CursorCodec(api.config.cursorSecret);
      const route = JSON.parse(Buffer.from(firstCursor.split('.')[0]!, 'base64url').toString()).r as string;
      const position = { c: new Date().toISOString(), i: 'x' };
      const forged: [string, string][] = [
        ['another route', codec.encode({ route: 'other.route', accountId: tenant.accountId }, position)],
        ['the patients route', codec.encode({ route: 'patients.list', accountId: tenant.accountId }, position)],
        ['this route for another account', codec.encode({ route, accountId: other.accountId }, position)],
        [
          'a position that is not a date',
          codec.encode({ route, accountId: tenant.accountId }, { c: 'yesterday', i: 'x' }),
        ],
        [
          'a position without an id',
          codec.encode({ route, accountId: tenant.accountId }, { c: new Date().toISOString() }),
        ],
        [
          'an operator object in the position',
          codec.encode({ route, accountId: tenant.accountId }, {
            c: { $gt: '' },
            i: { $ne: null },
          } as unknown as Record<string, string>),
        ],
      ];
      for (const [what, cursor] of forged) await expectCursorRefused(tenant, cursor, what);
    });

    it('still accepts a genuine cursor after the refusals', async () => {
      const res = await list(tenant, `?limit=10&cursor=${encodeURIComponent(firstCursor)}`);
      expect(res.status).to.equal(200);
      expect(res.body.data).to.have.length(10);
    });
  });
});
