// The public catalog over the brand list fixtures (testkit/catalog.ts): search, lookup, logos, edge caching.
import { expect } from 'chai';
import { words } from '#core/catalog/fold.js';
import { TestApi } from '../../../../testkit/api.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';

const BASE = '/api/sdk/v1/catalog';

describe('sdk: catalog search, lookup and logos on the brand list fixtures', () => {
  let api: TestApi;
  before(async () => {
    api = await TestApi.start();
    await publishTo(api, realSources());
  });
  after(() => api.close());

  const search = (query: string, headers: Record<string, string> = {}) =>
    api.request('GET', `${BASE}/brands?${query}`, { headers });
  const names = async (query: string) => ((await search(query)).body.brands as { name: string }[]).map((b) => b.name);

  describe('GET /catalog/brands', () => {
    it('finds listed brands by word starts, best match first, with every field of a brand', async () => {
      const res = await search('q=larkmoor%20gen');
      expect(res.status).to.equal(200);
      expect(res.body.count).to.equal(res.body.brands.length);
      expect(res.body.brands[0]).to.include({ name: 'Larkmoor General Hospital', platformType: 'CERNER', state: 'LA' });
      expect(res.body.brands[0]).to.have.all.keys(
        'id',
        'name',
        'aliases',
        'platformType',
        'fhirBaseUrl',
        'city',
        'state',
        'portalUrl',
        'logoUrl',
        'endpoint',
        'fuzzy',
      );
      expect(res.body.brands[0].fuzzy).to.equal(false);
      // No health checks in this catalog: every endpoint is UNKNOWN.
      expect(res.body.brands[0].endpoint).to.deep.equal({
        status: 'UNKNOWN',
        fhirVersion: null,
        smartConfiguration: false,
        checkedAt: null,
      });
      expect(res.body.brands[0].fhirBaseUrl).to.match(/^https:\/\/fhir-myrecord\.cerner\.com\/r4\//);
    });

    it('ranks name matches, then alias matches, then location-only matches ("new york")', async () => {
      const res = await search('q=new%20york&limit=100');
      const tier = (b: { name: string; aliases: string[]; state: string | null }) =>
        /new york/i.test(b.name) ? 0 : b.aliases.some((a) => /new york/i.test(a)) ? 1 : b.state === 'NY' ? 2 : 3;
      const tiers = (res.body.brands as { name: string; aliases: string[]; state: string | null }[]).map(tier);
      expect(tiers).to.include.members([0, 2]);
      expect(tiers).to.not.include(3);
      expect([...tiers].sort((x, y) => x - y)).to.deep.equal(tiers);
    });

    it('matches a state by code and by full name alike', async () => {
      const byCode = await names('q=mercy%20ks&limit=100');
      const byName = await names('q=mercy%20kansas&limit=100');
      expect(byCode).to.include('MERCY REGIONAL HOSPITAL INC');
      // "kansas" also starts a word of the city "Kansas City": those brands come on top of the state's.
      expect(byName).to.include.members(byCode);
      expect(byName).to.include("Mercy Children's Hospital");
    });

    it('finds a brand by the name of a duplicate merged into it (alias), below name matches', async () => {
      // Harrowgate's seven organisations share one FHIR system, named after its host (harrowgatehg).
      const res = await search('q=wexford%20foot');
      expect(res.body.brands[0]).to.include({
        name: 'Harrowgate Healthcare Group',
        fhirBaseUrl: 'https://epicproxy.harrowgatehg.example/FHIRProxy/api/FHIR/R4',
      });
      expect(res.body.brands[0].aliases).to.include('Wexford Foot Surgery');
    });

    it('ignores case, diacritics and punctuation, and takes a one-letter last word', async () => {
      expect(await names('q=ST.%20MARY%27S')).to.deep.equal(await names('q=st%20marys'));
      expect(await names('q=lárkmoor')).to.include('Larkmoor General Hospital');
      expect(await names('q=larkmoor%20g')).to.include('Larkmoor General Hospital');
    });

    it('is deterministic: the same query gives the same order', async () => {
      const first = await search('q=univ&limit=100');
      const second = await search('q=univ&limit=100');
      expect(second.text).to.equal(first.text);
    });

    it('filters by platform, case-insensitively', async () => {
      const epic = await search('q=mercy&platform=epic&limit=100');
      expect(epic.body.brands.length).to.be.greaterThan(0);
      expect(epic.body.brands.every((b: { platformType: string }) => b.platformType === 'EPIC')).to.equal(true);
      const cerner = await search('q=mercy&platform=CERNER&limit=100');
      expect(cerner.body.brands.every((b: { platformType: string }) => b.platformType === 'CERNER')).to.equal(true);
    });

    it('honours limit (default 25) and answers short or missing queries with nothing', async () => {
      expect((await search('q=he')).body.count).to.equal(25);
      expect((await search('q=he&limit=3')).body.count).to.equal(3);
      for (const query of ['', 'q=', 'q=a', 'q=%20%20a%20%20']) {
        const res = await search(query);
        expect(res.status, query).to.equal(200);
        expect(res.body, query).to.deep.equal({ brands: [], count: 0 });
      }
    });

    it('browses a platform without q: its brands in name order, a page at a time, each once', async () => {
      const seen: { id: string; name: string; platformType: string }[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = `platform=epic&limit=40${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
        const res = await search(query);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.count).to.equal(res.body.brands.length);
        seen.push(...res.body.brands);
        cursor = res.body.nextCursor;
        pages++;
      } while (cursor !== null && pages < 1000);
      expect(seen.length).to.be.greaterThan(40); // more than one page
      expect(seen.every((b) => b.platformType === 'EPIC')).to.equal(true);
      expect(new Set(seen.map((b) => b.id)).size).to.equal(seen.length);
      // By folded name (case, diacritics and punctuation ignored), then id: the search's own tie order.
      const keys = seen.map((b) => [words(b.name).join(' '), b.id] as const);
      for (let i = 1; i < keys.length; i++)
        expect(
          keys[i - 1]![0] < keys[i]![0] || (keys[i - 1]![0] === keys[i]![0] && keys[i - 1]![1] < keys[i]![1]),
          String(i),
        ).to.equal(true);
      const first = await search('platform=EPIC&limit=40');
      expect(first.body.brands.map((b: { id: string }) => b.id)).to.deep.equal(seen.slice(0, 40).map((b) => b.id));
      // A cursor only continues a browse, and only one it made.
      expect(
        (await search(`q=mercy&platform=EPIC&cursor=${encodeURIComponent(first.body.nextCursor)}`)).status,
      ).to.equal(400);
      expect((await search('platform=EPIC&cursor=not-a-cursor')).status).to.equal(400);
      expect((await search(`platform=CERNER&cursor=${encodeURIComponent(first.body.nextCursor)}`)).status).to.equal(
        400,
      );
      // Searches carry no nextCursor.
      expect((await search('q=mercy')).body).to.not.have.property('nextCursor');
    });

    const bad: [string, string][] = [
      ['q over 200 characters', `q=${'a'.repeat(201)}`],
      ['an unknown platform', 'q=mercy&platform=epic-ish'],
      ['limit 0', 'q=mercy&limit=0'],
      ['limit 101', 'q=mercy&limit=101'],
      ['a fractional limit', 'q=mercy&limit=2.5'],
      ['a limit in words', 'q=mercy&limit=ten'],
      ['q given twice', 'q=mercy&q=mayo'],
    ];
    for (const [what, query] of bad) {
      it(`rejects ${what} with a 400 problem that CORS lets the page read`, async () => {
        const res = await search(query);
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('BAD_REQUEST');
        expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      });
    }

    it('caches at the edge: Cache-Control, CORS, an ETag per snapshot and request, 304 on match', async () => {
      const res = await search('q=mercy');
      expect(res.headers.get('cache-control')).to.equal('public, max-age=300, stale-while-revalidate=60');
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      const etag = res.headers.get('etag')!;
      expect(etag).to.match(/^"[^"]+"$/);
      expect((await search('q=mercy&limit=5')).headers.get('etag')).to.not.equal(etag);
      const again = await search('q=mercy', { 'if-none-match': etag });
      expect(again.status).to.equal(304);
      expect(again.text).to.equal('');
      expect(again.headers.get('etag')).to.equal(etag);
      expect(again.headers.get('cache-control')).to.equal('public, max-age=300, stale-while-revalidate=60');
      expect(again.headers.get('access-control-allow-origin')).to.equal('*');
    });

    it('answers a CORS preflight', async () => {
      const res = await api.request('OPTIONS', `${BASE}/brands?q=mercy`, {
        headers: { origin: 'https://app.example', 'access-control-request-headers': 'if-none-match' },
      });
      expect(res.status).to.equal(204);
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      expect(res.headers.get('access-control-allow-headers')).to.match(/if-none-match/i);
    });
  });

  describe('GET /catalog/brands/{brandId}', () => {
    it('returns the brand found by search, edge-cached with an ETag', async () => {
      const found = (await search('q=larkmoor')).body.brands[0];
      const res = await api.request('GET', `${BASE}/brands/${found.id}`);
      expect(res.status).to.equal(200);
      const { fuzzy: _fuzzy, ...brand } = found;
      expect(res.body).to.deep.equal({ brand });
      expect(res.headers.get('cache-control')).to.equal('public, max-age=300, stale-while-revalidate=60');
      expect(
        (
          await api.request('GET', `${BASE}/brands/${found.id}`, {
            headers: { 'if-none-match': res.headers.get('etag')! },
          })
        ).status,
      ).to.equal(304);
    });

    it('answers 404 problem details for unknown and malformed ids', async () => {
      for (const id of ['bunknownbrandid000000000000000000', 'not a brand', '%00', 'x'.repeat(300)]) {
        const res = await api.request('GET', `${BASE}/brands/${encodeURIComponent(id)}`);
        expect(res.status, id).to.equal(404);
        expect(res.body.code).to.equal('NOT_FOUND');
        expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      }
    });
  });

  describe('GET /catalog/brands/{brandId}/logo', () => {
    it('redirects (307, long-cached) to the pre-rendered PNG of each size, served immutable', async () => {
      const brand = (await search('q=examplelabs')).body.brands[0];
      expect(brand.logoUrl).to.equal(`${api.url}${BASE}/brands/${brand.id}/logo`);
      const seen = new Set<string>();
      for (const size of [64, 128, 256, 512]) {
        const res = await fetch(`${brand.logoUrl}?size=${size}`, { redirect: 'manual' });
        expect(res.status).to.equal(307);
        expect(res.headers.get('cache-control')).to.equal('public, max-age=86400');
        const asset = await fetch(new URL(res.headers.get('location')!, api.url));
        expect(asset.status).to.equal(200);
        expect(asset.headers.get('content-type')).to.equal('image/png');
        expect(asset.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
        const png = Buffer.from(await asset.arrayBuffer());
        expect(png.subarray(1, 4).toString()).to.equal('PNG');
        expect(png.readUInt32BE(16)).to.equal(size); // IHDR width
        seen.add(res.headers.get('location')!);
      }
      expect(seen.size).to.equal(4);
      const byDefault = await fetch(brand.logoUrl, { redirect: 'manual' });
      expect(byDefault.headers.get('location')).to.equal(
        (await fetch(`${brand.logoUrl}?size=128`, { redirect: 'manual' })).headers.get('location'),
      );
    });

    it('is 404 for a brand without artwork (logoUrl null) and for an unknown brand; 400 for an unknown size', async () => {
      const plain = (await search('q=larkmoor')).body.brands[0];
      expect(plain.logoUrl).to.equal(null);
      expect((await api.request('GET', `${BASE}/brands/${plain.id}/logo`)).status).to.equal(404);
      expect((await api.request('GET', `${BASE}/brands/bnope/logo`)).status).to.equal(404);
      const withLogo = (await search('q=examplelabs')).body.brands[0];
      for (const size of ['100', '0', 'big', '1024'])
        expect((await api.request('GET', `${BASE}/brands/${withLogo.id}/logo?size=${size}`)).status, size).to.equal(
          400,
        );
    });

    it('does not serve what is not an asset', async () => {
      // A name longer than a file system holds (found by Schemathesis: it was a 503 "object storage unreachable").
      for (const key of [
        'nope.png',
        '..%2F..%2Fetc%2Fpasswd',
        '%2e%2e',
        '0'.repeat(300),
        `logos/${'a'.repeat(256)}.png`,
      ]) {
        expect((await api.request('GET', `${BASE}/assets/${key}`)).status, key).to.equal(404);
      }
    });
  });
});
