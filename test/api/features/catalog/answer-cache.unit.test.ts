// The catalog's answer cache (api/src/features/catalog/answer-cache.ts) as clients meet it: a repeated search or
// lookup is answered from memory, and yet every answer is the one the snapshot, the endpoint-health publication and
// the request's origin call for at that moment; invalid input fails as before, and If-None-Match still gives 304.
import { expect } from 'chai';
import type { IncomingHttpHeaders } from 'node:http';
import { LOGO_SIZES, type BrandLogo, type CatalogBrand, type EndpointHealth } from '#core/catalog/model.js';
import type { ObjectStorage } from '#core/object-storage/index.js';
import { AppError } from '../../../../api/src/shared/http/errors.js';
import type { ServedCatalog } from '../../../../api/src/features/catalog/active.js';
import { AnswerCache, ENTRY_OVERHEAD } from '../../../../api/src/features/catalog/answer-cache.js';
import { CatalogAnswers, type CatalogAnswer } from '../../../../api/src/features/catalog/answers.js';
import { BrandSearchIndex } from '../../../../api/src/features/catalog/search/index.js';
import { CatalogService, type EndpointHealthView } from '../../../../api/src/features/catalog/service.js';
import { buildBrand } from './search/real-brands.js';

const LOGO: BrandLogo = {
  kind: 'rendered',
  assets: Object.fromEntries(LOGO_SIZES.map((size) => [size, `logo-${size}.png`])) as BrandLogo['assets'],
};

/** A replica's catalog and endpoint health, both replaceable as the followers replace them. */
class World {
  served: ServedCatalog | null = null;
  health = new Map<string, EndpointHealth>();
  version = '0';
  readonly view: EndpointHealthView = {
    get: (id) => this.health.get(id),
    version: '',
  };

  constructor() {
    Object.defineProperty(this.view, 'version', { get: () => this.version });
  }

  activate(snapshotId: string, brands: CatalogBrand[]): void {
    this.served = { snapshotId, index: BrandSearchIndex.build(brands), loadedAt: new Date(0) };
  }

  publish(version: string, health: Map<string, EndpointHealth>): void {
    this.version = version;
    this.health = health;
  }

  answers(options: { publicBaseUrl?: string; trustProxy?: boolean; cacheBytes?: number } = {}) {
    const storage = { publicUrl: (key: string) => `https://cdn.example.test/${key}` } as unknown as ObjectStorage;
    const service = new CatalogService({ get: () => this.served }, storage, this.view, () => undefined);
    return new CatalogAnswers(service, options.publicBaseUrl, options.trustProxy ?? false, options.cacheBytes);
  }
}

const request = (query: string, headers: IncomingHttpHeaders = {}) => ({
  query,
  headers: { host: 'app.example.test', ...headers },
  encrypted: false,
});
const bodyOf = (answer: CatalogAnswer) => JSON.parse(answer.body!) as { brands: Record<string, unknown>[] };

const mercy = buildBrand({ name: 'Mercy Medical Center', city: 'Springfield', state: 'IL', logo: LOGO });
const mayo = buildBrand({ name: 'Mayo Clinic', city: 'Rochester', state: 'MN' });
const UP: EndpointHealth = { status: 'UP', fhirVersion: '4.0.1', smartConfiguration: true, checkedAt: '2026-11-27' };

describe('sdk: the catalog answer cache', () => {
  let world: World;
  beforeEach(() => {
    world = new World();
    world.activate('snap1', [mercy, mayo]);
  });

  it('answers a repeated search, lookup and logo redirect from memory, the same answer each time', () => {
    const answers = world.answers();
    answers.search(request('q=mercy%20med')); // a search is kept from its second sighting
    const first = answers.search(request('q=mercy%20med'));
    const lookup = answers.lookup(mercy.id, request(''));
    const logo = answers.logo(mercy.id, request('size=128'));
    expect(answers.cacheUsage.entries).to.equal(3);
    expect(answers.search(request('q=mercy%20med'))).to.equal(first);
    expect(answers.lookup(mercy.id, request(''))).to.equal(lookup);
    expect(answers.logo(mercy.id, request('size=128'))).to.equal(logo);
    expect(answers.cacheUsage.entries).to.equal(3);
    // What was kept is what an empty cache builds, byte for byte.
    const fresh = world.answers();
    expect(fresh.search(request('q=mercy%20med'))).to.deep.equal(first);
    expect(fresh.lookup(mercy.id, request(''))).to.deep.equal(lookup);
    expect(fresh.logo(mercy.id, request('size=128'))).to.deep.equal(logo);
    expect(bodyOf(first).brands.map((b) => b.name)).to.deep.equal(['Mercy Medical Center']);
    expect(logo).to.include({ status: 307 });
    expect(logo.headers.Location).to.equal('https://cdn.example.test/logo-128.png');
  });

  it('keeps a search from its second sighting: one asked once leaves the kept answers as they were', () => {
    const answers = world.answers({ cacheBytes: 4 * ENTRY_OVERHEAD + 8192 });
    answers.search(request('q=mayo'));
    const popular = answers.search(request('q=mayo'));
    expect(answers.cacheUsage.entries).to.equal(1);
    // Typing: a new prefix with every keystroke, none asked again.
    for (let n = 1; n <= 200; n++)
      answers.search(request(`q=mercy&limit=${n % 100 || 100}&platform=${n > 100 ? 'EPIC' : 'CERNER'}`));
    expect(answers.cacheUsage.entries, 'no one-off search was kept').to.equal(1);
    expect(answers.search(request('q=mayo'))).to.equal(popular);
    const again = answers.search(request('q=mercy&limit=7&platform=CERNER'));
    expect(answers.search(request('q=mercy&limit=7&platform=CERNER')), 'asked again, then kept').to.equal(again);
  });

  it('keeps a search that is only ever revalidated, from its second sighting', () => {
    const answers = world.answers();
    const etag = answers.search(request('q=mayo')).headers.ETag!;
    const revalidate = () => answers.search(request('q=mayo', { 'if-none-match': etag }));
    expect(revalidate().status).to.equal(304);
    expect(answers.cacheUsage.entries, 'kept at its second sighting, a 304').to.equal(1);
    expect(revalidate(), 'from the kept answer').to.equal(revalidate());
    expect(answers.search(request('q=mayo')).status).to.equal(200);
  });

  it('answers from a new snapshot at once, with a new ETag', () => {
    const answers = world.answers();
    const before = answers.search(request('q=mercy'));
    const lookupBefore = answers.lookup(mercy.id, request(''));
    world.activate('snap2', [{ ...mercy, name: 'Mercy Health Springfield' }, mayo]);
    const after = answers.search(request('q=mercy'));
    expect(bodyOf(after).brands.map((b) => b.name)).to.deep.equal(['Mercy Health Springfield']);
    expect(after.headers.ETag).to.not.equal(before.headers.ETag);
    const lookupAfter = answers.lookup(mercy.id, request(''));
    expect(JSON.parse(lookupAfter.body!).brand.name).to.equal('Mercy Health Springfield');
    expect(lookupAfter.headers.ETag).to.not.equal(lookupBefore.headers.ETag);
    // The old snapshot's entries went with it.
    expect(answers.cacheUsage.entries).to.equal(2);
  });

  it('shows a new endpoint-health publication at once, with a new ETag', () => {
    const answers = world.answers();
    const before = answers.search(request('q=mercy'));
    expect(bodyOf(before).brands[0]!.endpoint).to.include({ status: 'UNKNOWN' });
    world.publish('v2', new Map([[mercy.id, UP]]));
    const after = answers.search(request('q=mercy'));
    expect(bodyOf(after).brands[0]!.endpoint).to.include({ status: 'UP' });
    expect(after.headers.ETag).to.not.equal(before.headers.ETag);
    expect(JSON.parse(answers.lookup(mercy.id, request('')).body!).brand.endpoint).to.include({ status: 'UP' });
    // status=up filters by the new publication, not by what was kept.
    world.publish('v3', new Map());
    expect(bodyOf(answers.search(request('q=mercy&status=up'))).brands).to.have.length(0);
  });

  it('keeps origins apart: Host without PUBLIC_BASE_URL, X-Forwarded-* only behind a trusted proxy', () => {
    const answers = world.answers();
    const logoUrlFor = (headers: IncomingHttpHeaders, from = answers) =>
      bodyOf(from.search(request('q=mercy', headers))).brands[0]!.logoUrl;
    expect(logoUrlFor({ host: 'a.example.test' })).to.equal(
      `http://a.example.test/api/sdk/v1/catalog/brands/${mercy.id}/logo`,
    );
    expect(logoUrlFor({ host: 'b.example.test' })).to.equal(
      `http://b.example.test/api/sdk/v1/catalog/brands/${mercy.id}/logo`,
    );
    expect(JSON.parse(answers.lookup(mercy.id, request('', { host: 'b.example.test' })).body!).brand.logoUrl).to.match(
      /^http:\/\/b\.example\.test\//,
    );
    // Not trusted: the forwarded host changes nothing.
    expect(logoUrlFor({ host: 'a.example.test', 'x-forwarded-host': 'evil.example.test' })).to.match(/^http:\/\/a\./);

    const proxied = world.answers({ trustProxy: true });
    expect(logoUrlFor({ host: 'a.example.test' }, proxied)).to.match(/^http:\/\/a\.example\.test\//);
    expect(
      logoUrlFor(
        { host: 'a.example.test', 'x-forwarded-host': 'pub.example.test', 'x-forwarded-proto': 'https' },
        proxied,
      ),
    ).to.match(/^https:\/\/pub\.example\.test\//);
    expect(logoUrlFor({ host: 'a.example.test', 'x-forwarded-proto': 'https' }, proxied)).to.match(
      /^https:\/\/a\.example\.test\//,
    );

    const fixed = world.answers({ publicBaseUrl: 'https://api.portico.example' });
    expect(logoUrlFor({ host: 'a.example.test' }, fixed)).to.match(/^https:\/\/api\.portico\.example\//);
    expect(logoUrlFor({ host: 'b.example.test' }, fixed)).to.match(/^https:\/\/api\.portico\.example\//);
    expect(fixed.cacheUsage.entries, 'one origin, one entry').to.equal(1);
  });

  it('answers If-None-Match with 304 from a kept answer, and with 200 once the snapshot moved on', () => {
    const answers = world.answers();
    answers.search(request('q=mercy'));
    const full = answers.search(request('q=mercy'));
    expect(answers.search(request('q=mercy')), 'kept').to.equal(full);
    const etag = full.headers.ETag!;
    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const answer = answers.search(request('q=mercy', { 'if-none-match': ifNoneMatch }));
      expect(answer.status, ifNoneMatch).to.equal(304);
      expect(answer.body).to.equal(undefined);
      expect(answer.headers).to.deep.include({ ETag: etag, 'Cache-Control': full.headers['Cache-Control'] });
    }
    expect(answers.search(request('q=mercy', { 'if-none-match': '"other"' })).status).to.equal(200);
    const lookupTag = answers.lookup(mercy.id, request('')).headers.ETag!;
    expect(answers.lookup(mercy.id, request('', { 'if-none-match': lookupTag })).status).to.equal(304);
    world.activate('snap2', [mercy, mayo]);
    expect(answers.search(request('q=mercy', { 'if-none-match': etag })).status).to.equal(200);
    expect(answers.lookup(mercy.id, request('', { 'if-none-match': lookupTag })).status).to.equal(200);
  });

  it('still rejects invalid input (problem details), whatever it has kept', () => {
    const answers = world.answers();
    answers.search(request('q=mercy'));
    answers.search(request('q=mercy'));
    answers.logo(mercy.id, request('size=128'));
    const status = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return error instanceof AppError ? error.status : 'not an AppError';
      }
      return 'no error';
    };
    expect(status(() => answers.search(request('q=mercy&limit=0')))).to.equal(400);
    expect(status(() => answers.search(request('q=mercy&q=mayo')))).to.equal(400);
    expect(status(() => answers.search(request('q=mercy&platform=nope')))).to.equal(400);
    expect(status(() => answers.search(request('q=mercy', { host: 'bad host!' })))).to.equal(400);
    expect(status(() => answers.search(request('q=mercy', { host: undefined })))).to.equal(400);
    expect(status(() => answers.lookup('bnope', request('')))).to.equal(404);
    expect(status(() => answers.lookup(mercy.id, request('', { host: 'bad host!' })))).to.equal(400);
    expect(status(() => answers.logo(mercy.id, request('size=100')))).to.equal(400);
    expect(status(() => answers.logo(mayo.id, request('size=128')))).to.equal(404); // no artwork
    expect(answers.cacheUsage.entries, 'nothing invalid was kept').to.equal(2);
  });

  it('stays within its bound in bytes and entries, evicting the least recently used', () => {
    const maxBytes = 40 * ENTRY_OVERHEAD;
    const answers = world.answers({ cacheBytes: maxBytes });
    const hot = answers.lookup(mercy.id, request(''));
    for (let limit = 1; limit <= 100; limit++) {
      for (const q of ['m', 'mercy', 'm', 'mercy']) answers.search(request(`q=${q}&limit=${limit}`));
      expect(answers.lookup(mercy.id, request('')), 'a hot entry stays').to.equal(hot);
      const { entries, bytes } = answers.cacheUsage;
      expect(bytes).to.be.at.most(maxBytes);
      expect(entries).to.be.at.most(maxBytes / ENTRY_OVERHEAD);
    }
    expect(answers.cacheUsage.entries).to.be.greaterThan(10);
    // The first searches were evicted: asked again, they are answered afresh (a new object, the same content).
    const again = answers.search(request('q=mercy&limit=1'));
    expect(bodyOf(again).brands.map((b) => b.name)).to.deep.equal(['Mercy Medical Center']);
  });

  it('counts each entry at two bytes a character plus its overhead, and keeps none larger than the bound', () => {
    const cache = new AnswerCache<{ text: string }>((value, key) => key.length + value.text.length, 4 * ENTRY_OVERHEAD);
    const entries = cache.of('s', 'v');
    entries.set('k', { text: 'x'.repeat(99) });
    expect(cache.usage).to.deep.equal({ entries: 1, bytes: 2 * 100 + ENTRY_OVERHEAD });
    entries.set('big', { text: 'x'.repeat(4 * ENTRY_OVERHEAD) });
    expect(entries.has('big')).to.equal(false);
    expect(cache.of('s', 'v').has('k')).to.equal(true);
    expect(cache.of('s', 'v2').size, 'a new health version empties it').to.equal(0);
  });
});
