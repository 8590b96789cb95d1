// Logo pre-rendering: content sniffing, safe decoding, https artwork through the SSRF-filtering agent (nock
// stands in for the internet), the favicon fallback, content-addressed reuse, and the HL7 example bundles'
// artwork published and served by the API as PNG and WebP.
import { expect } from 'chai';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import nock from 'nock';
import sharp from 'sharp';
import type { ActiveCatalog } from '../../../api/src/features/catalog/active.js';
import { LOGO_SIZES } from '#core/catalog/model.js';
import { BrandSearchIndex } from '../../../api/src/features/catalog/search/index.js';
import type { FileObjectStorage } from '#core/object-storage/index.js';
import { CatalogService } from '../../../api/src/features/catalog/service.js';
import { parseSource, type LoadedSource } from '../../../operator/src/pipeline/index.js';
import {
  iconLinks,
  inertSvg,
  largestIconImage,
  LogoError,
  renderCounters,
  sniffImageType,
  storeLogos,
  type LogoRequest,
  type LogoSettings,
} from '../../../operator/src/pipeline/logos.js';
import { publishCatalog } from '../../../operator/src/pipeline/publish.js';
import { TestApi } from '../../../testkit/api.js';
import { brandFile } from '../../../testkit/brand-data.js';
import { bmpEntry, bombPng, centre, everyFormat, ico, png, tempStorage, tripwire } from './logo-fixtures.js';

let serial = 0;
const request = (logoUrl?: string, extra: Partial<LogoRequest> = {}): LogoRequest => ({
  brandId: `brand${++serial}`,
  portalUrl: null,
  fhirBaseUrl: 'https://fhir.example.org/r4',
  ...(logoUrl !== undefined && { logoUrl }),
  ...extra,
});
const dataUrl = (bytes: Buffer, type = 'image/png') => `data:${type};base64,${bytes.toString('base64')}`;
const limits = { maxBytes: 64 * 1024, timeoutMs: 300, maxRedirects: 2 };
const BLUE = [0, 0, 255, 255];

describe('operator: logo pre-rendering', () => {
  let storage: FileObjectStorage;
  let remove: () => Promise<void>;
  beforeEach(async () => ({ storage, remove } = await tempStorage()));
  afterEach(async () => {
    nock.cleanAll();
    await remove();
  });
  const run = (requests: LogoRequest[], settings: LogoSettings = {}) =>
    storeLogos(storage, requests, { limits, ...settings });
  const only = async (logoUrl: string, settings?: LogoSettings) => run([request(logoUrl)], settings);
  const stored = async (key: string | undefined) => (await storage.get(key!))!;

  describe('content sniffing', () => {
    it('recognises PNG, JPEG, GIF, WebP, AVIF, ICO and SVG by their bytes, whatever the declared type, and renders each', async () => {
      const formats = await everyFormat();
      for (const [type, bytes] of Object.entries(formats)) expect(sniffImageType(bytes), type).to.equal(type);
      const result = await run(Object.values(formats).map((bytes) => request(dataUrl(bytes, 'text/plain'))));
      expect(result).to.deep.include({ rendered: 7, failed: 0, reasons: {} });
    });

    it('refuses text, HTML, HEIC, cursors and unsafe SVG before any decoder sees them', () => {
      const refused = [
        'hello, I am a text file called logo.png',
        '<!DOCTYPE html><html><body><svg xmlns="http://www.w3.org/2000/svg"></svg></body></html>',
        '<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY lol "lol">]><svg xmlns="http://www.w3.org/2000/svg">&lol;</svg>',
        '<?xml-stylesheet href="https://evil.example/x.css"?><svg xmlns="http://www.w3.org/2000/svg"></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg><script>after the root</script>',
        '<svg>\u0000</svg>',
        `${' '.repeat(100_000)}<html>`, // linear time: no catastrophic backtracking in the SVG check
      ].map((text) => Buffer.from(text));
      refused.push(
        Buffer.from('\u0000\u0000\u0000\u0018ftypheic\u0000\u0000\u0000\u0000mif1heic', 'latin1'),
        Buffer.from([0, 0, 2, 0, 1, 0, ...new Array(16).fill(0)]),
        Buffer.alloc(0),
      );
      for (const bytes of refused) expect(() => sniffImageType(bytes), bytes.toString('latin1')).to.throw(LogoError);
    });

    it('counts a text file served as .png, an HTML page and a truncated PNG as failures; only the PNG reaches sharp', async () => {
      nock('https://logos.example.org')
        .get('/logo.png')
        .reply(200, 'just text', { 'content-type': 'image/png' })
        .get('/page.png')
        .reply(200, '<!doctype html><html><head><title>Not found</title></head></html>', {
          'content-type': 'image/png',
        });
      const before = renderCounters.artworks;
      const truncated = (await png(256)).subarray(0, 400);
      const result = await run([
        request('https://logos.example.org/logo.png'),
        request('https://logos.example.org/page.png'),
        request(dataUrl(truncated)),
      ]);
      expect(result).to.deep.include({ rendered: 0, failed: 3, reasons: { 'unsupported-type': 2, undecodable: 1 } });
      expect(renderCounters.artworks - before).to.equal(1);
      expect(result.logos.size).to.equal(0);
    });
  });

  describe('safe rendering', () => {
    it('refuses a decompression bomb at its header (limitInputPixels)', async () => {
      const bomb = bombPng();
      expect(bomb.length).to.be.below(100_000); // 20000 × 20000 pixels
      expect((await only(dataUrl(bomb))).reasons).to.deep.equal({ 'too-many-pixels': 1 });
    });

    it('renders SVG from a buffer without fetching or reading anything it references', async () => {
      const wire = await tripwire();
      const at = `127.0.0.1:${wire.port}`;
      const svg = `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100">
        <style>@import url("http://${at}/a.css"); rect { stroke: url(http://${at}/p.svg#p) }</style>
        <image href="http://${at}/i.png" width="50" height="50"/><image xlink:href='https://${at}/j.png' width="50" height="50"/>
        <image href="file:///etc/passwd" width="9" height="9"/><use href="http://${at}/u.svg#a"/><rect width="100" height="100" fill="#0000ff"/></svg>`;
      expect(inertSvg(Buffer.from(svg)).toString())
        .not.to.include(at)
        .and.not.to.include('/etc/passwd');
      const result = await only(dataUrl(Buffer.from(svg), 'image/svg+xml'));
      expect(result).to.include({ rendered: 1, failed: 0 });
      expect(await centre((await stored([...result.logos.values()][0]!.assets['512'])).body)).to.deep.equal(BLUE);
      // A connection of our own, once the tripwire has accepted it (and so every one attempted before it: the
      // accept queue is first in, first out), must be the only one it saw.
      await new Promise<void>((resolve) =>
        connect(wire.port, '127.0.0.1')
          .on('error', () => {})
          .once('close', () => resolve()),
      );
      expect(wire.connections()).to.equal(1);
      await wire.close();
    });

    it('renders every size as PNG and WebP; sizes left out map to the nearest larger rendered one', async () => {
      const logo = [...(await only(dataUrl(await png(1024, '#0000ff')))).logos.values()][0]!;
      for (const size of LOGO_SIZES) {
        for (const [format, keys] of [
          ['png', logo.assets],
          ['webp', logo.webp!],
        ] as const) {
          const object = await stored(keys[`${size}`]);
          expect(object.contentType).to.equal(`image/${format}`);
          expect(await sharp(object.body).metadata()).to.include({ format, width: size, height: size });
          if (format === 'png') expect(await centre(object.body)).to.deep.equal(BLUE);
        }
      }
      const subset = [...(await only(dataUrl(await png(300)), { sizes: [128, 512] })).logos.values()][0]!;
      expect([subset.assets['64'], subset.assets['256']]).to.deep.equal([subset.assets['128'], subset.assets['512']]);
      expect([subset.webp!['64'], subset.webp!['256']]).to.deep.equal([subset.webp!['128'], subset.webp!['512']]);
      expect(new Set(Object.values(subset.assets)).size).to.equal(2);
    });
  });

  describe('https logos through the filtering agent', () => {
    it('follows redirects up to the limit, trusting the bytes rather than Content-Type', async () => {
      nock('https://logos.example.org')
        .get('/a.png')
        .reply(301, '', { location: '/b' })
        .get('/b')
        .reply(302, '', { location: 'https://cdn.example.org/c' });
      nock('https://cdn.example.org')
        .get('/c')
        .reply(200, await png(128), { 'content-type': 'text/html' });
      expect(await only('https://logos.example.org/a.png')).to.include({ rendered: 1, failed: 0 });
      nock('https://logos.example.org')
        .get('/r0')
        .reply(302, '', { location: '/r1' })
        .get('/r1')
        .reply(302, '', { location: '/r2' })
        .get('/r2')
        .reply(302, '', { location: '/r3' })
        .get('/to-http')
        .reply(302, '', { location: 'http://logos.example.org/x.png' })
        .get('/to-private')
        .reply(307, '', { location: 'https://10.1.2.3/x.png' });
      const result = await run(['/r0', '/to-http', '/to-private'].map((p) => request(`https://logos.example.org${p}`)));
      expect(result.reasons).to.deep.equal({ 'too-many-redirects': 1, 'not-https': 1, 'refused-address': 1 });
    });

    it('refuses bodies over the size limit, declared or streamed', async () => {
      const big = Buffer.concat([await png(64), Buffer.alloc(100 * 1024)]);
      nock('https://logos.example.org')
        .get('/declared.png')
        .reply(200, big, { 'content-length': String(big.length) })
        .get('/streamed.png')
        .reply(200, () => Readable.from([big.subarray(0, 40_000), big.subarray(40_000)]));
      const result = await run([
        request('https://logos.example.org/declared.png'),
        request('https://logos.example.org/streamed.png'),
      ]);
      expect(result.reasons).to.deep.equal({ 'too-large': 2 });
    });

    it('gives up on a server slower than the deadline', async () => {
      nock('https://slow.example.org')
        .get('/logo.png')
        .delay(3000)
        .reply(200, await png(64));
      // The body comes after 3 s: a timeout (not a rendered logo) means the deadline cut the fetch short.
      expect((await only('https://slow.example.org/logo.png')).reasons).to.deep.equal({ timeout: 1 });
    });

    it('refuses private, loopback, link-local and meta addresses, as literals or through DNS, and plain http', async () => {
      const wire = await tripwire();
      const refused = [
        `127.0.0.1:${wire.port}`,
        `localhost:${wire.port}`,
        `[::1]:${wire.port}`,
        `0x7f.1:${wire.port}`,
        '169.254.169.254',
        '10.0.0.1',
        '[fd00::1]',
        '0.0.0.0',
      ];
      const result = await run([
        ...refused.map((host) => request(`https://${host}/logo.png`)),
        request('http://logos.example.org/logo.png'),
      ]);
      expect(result.reasons).to.deep.equal({ 'refused-address': refused.length, 'not-https': 1 });
      expect(wire.connections()).to.equal(0);
      await wire.close();
    });
  });

  describe('favicon fallback', () => {
    it('renders the largest image of the portal’s /favicon.ico: its embedded PNG, not the small BMP entry', async () => {
      const icon = ico([{ bmp: bmpEntry(16, 16, [0, 0, 255, 255]), size: 16 }, { png: await png(256, '#0000ff') }]);
      nock('https://portal.example.org')
        .get('/mychart/')
        .reply(404)
        .get('/favicon.ico')
        .reply(200, icon, { 'content-type': 'text/plain' });
      const result = await run([request(undefined, { portalUrl: 'http://portal.example.org/mychart/' })], {
        faviconFallback: true,
      });
      expect(result).to.include({ rendered: 0, fallback: 1, failed: 0 });
      const logo = [...result.logos.values()][0]!;
      expect(logo.kind).to.equal('favicon');
      expect(await centre((await stored(logo.webp!['256'])).body)).to.deep.equal(BLUE);
    });

    it('decodes BMP icon entries: palette-free 24 and 32 bits, AND-mask transparency; refuses malformed icons', () => {
      const image = largestIconImage(
        ico([
          { bmp: bmpEntry(4, 4, [10, 20, 30, 0], (x) => x < 2, 24), size: 4 },
          { bmp: bmpEntry(8, 8, [10, 20, 30, 0], (x, y) => x === y, 24), size: 8 },
        ]),
      );
      expect(image).to.include({ kind: 'raw', width: 8, height: 8 });
      const pixels = image.kind === 'raw' ? [...image.data] : [];
      expect(pixels.slice(0, 8)).to.deep.equal([30, 20, 10, 0, 30, 20, 10, 255]); // (0,0) masked, (1,0) opaque
      const withAlpha = largestIconImage(ico([{ bmp: bmpEntry(2, 2, [1, 2, 3, 128]), size: 2 }]));
      expect(withAlpha.kind === 'raw' && [...withAlpha.data.subarray(0, 4)]).to.deep.equal([3, 2, 1, 128]);
      for (const broken of [
        ico([{ bmp: bmpEntry(8, 8, [0, 0, 0, 0]).subarray(0, 60), size: 8 }]),
        Buffer.from([0, 0, 1, 0, 1, 0]),
      ]) {
        expect(() => largestIconImage(broken)).to.throw(LogoError);
      }
    });

    it('uses the largest icon the FHIR host’s home page links when the logo fails and there is no portal', async () => {
      const html = `<!doctype html><html><head><!-- <link rel="icon" href="/old.png" sizes="512x512"> -->
        <link rel="shortcut icon" href="/small.png" sizes="16x16"><link rel=apple-touch-icon href="https://cdn.example.org/touch.png?v=1&amp;x=2">
        <link rel="icon" type="image/png" href="icons/32.png" sizes="32x32"><link rel="stylesheet" href="/x.css"></head></html>`;
      expect(iconLinks(html, new URL('https://fhir.example.org/r4/')).map((l) => [l.url, l.size])).to.deep.equal([
        ['https://cdn.example.org/touch.png?v=1&x=2', 180],
        ['https://fhir.example.org/r4/icons/32.png', 32],
        ['https://fhir.example.org/small.png', 16],
      ]);
      nock('https://logos.example.org').get('/missing.png').reply(404);
      nock('https://fhir.example.org')
        .get('/')
        .reply(200, html)
        .get('/favicon.ico')
        .reply(200, ico([{ png: await png(16, '#ff0000') }]));
      nock('https://cdn.example.org')
        .get('/touch.png')
        .query(true)
        .reply(200, await png(180, '#0000ff'));
      const result = await run([request('https://logos.example.org/missing.png')], { faviconFallback: true });
      expect(result).to.deep.include({ rendered: 0, fallback: 1, failed: 1, reasons: { 'http-status': 1 } });
      expect(await centre((await stored([...result.logos.values()][0]!.assets['128'])).body)).to.deep.equal(BLUE);
      expect(nock.isDone()).to.equal(true);
    });

    it('publishes brands without artwork when no site has an icon, and fetches nothing when the fallback is off', async () => {
      nock('https://fhir.example.org').get('/').reply(404).get('/favicon.ico').reply(404);
      const result = await run([request()], { faviconFallback: true });
      expect(result).to.deep.include({ fallback: 0, failed: 0, reasons: { 'favicon:no-favicon': 1 } });
      nock('https://fhir.example.org')
        .get('/favicon.ico')
        .reply(200, ico([{ png: await png(32) }]));
      expect((await run([request()])).logos.size).to.equal(0);
      expect(nock.isDone()).to.equal(false);
    });
  });

  describe('content-addressed reuse', () => {
    it('renders nothing on a re-import: every rendition is found by the source hash and rendering parameters', async () => {
      const requests = [request(dataUrl(await png(512, '#123456'))), request(dataUrl(await png(512, '#654321')))];
      const first = await run(requests);
      expect(first.artworks).to.deep.equal({ rendered: 2, reused: 0 });
      const before = { ...renderCounters };
      nock('https://cdn.example.org')
        .get('/same.png')
        .reply(200, await png(512, '#123456'));
      const again = await run([...requests, request('https://cdn.example.org/same.png')]);
      expect(renderCounters).to.deep.equal(before);
      expect(again.artworks).to.deep.equal({ rendered: 0, reused: 2 });
      for (const [brandId, logo] of first.logos) expect(again.logos.get(brandId)).to.deep.equal(logo);
      const changed = await run([request(dataUrl(await png(512, '#abcdef'))), ...requests], { concurrency: 1 });
      expect(changed.artworks).to.deep.equal({ rendered: 1, reused: 2 });
    });
  });

  describe('the HL7 example bundles', () => {
    let api: TestApi;
    before(async () => (api = await TestApi.start()));
    after(() => api.close());
    const hl7 = (): LoadedSource[] =>
      [1, 2, 3, 4].map((i) => ({
        name: `hl7-example${i}`,
        priority: i,
        platformType: 'OTHER',
        parsed: parseSource('smart-brands-bundle', brandFile(`smart-app-launch-examples/Bundle-example${i}.json`)),
      }));
    const publish = (sources: LoadedSource[], faviconFallback: boolean) =>
      publishCatalog({
        ref: api.config.catalog,
        spec: {
          rollout: { retainSnapshots: 3, minBrandRatioPercent: 0 },
          logos: { sizes: [...LOGO_SIZES], faviconFallback },
        },
        sources,
        store: api.services.snapshots,
        storage: api.services.storage,
      });

    it('renders every brand’s logo in PNG and WebP at every size, served by the logo operation', async () => {
      const svg =
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 100"><rect width="200" height="100" rx="12" fill="#0000ff"/></svg>';
      nock('https://example.org')
        .persist()
        .get(/\.svg$/)
        .reply(200, svg)
        .get(/\.png$/)
        .reply(200, await png(1024));
      nock('https://ehpmadison.example.com')
        .persist()
        .get('/logo.png')
        .reply(200, await png(300));
      const report = await publish(hl7(), false);
      expect(report.logos).to.deep.include({ rendered: report.brandCount, fallback: 0, failed: 0, reasons: {} });
      await api.services.activeCatalog.refresh();
      const brands = (await api.services.snapshots.load(report.snapshot.id))!.brands;
      expect(brands.length).to.equal(6);
      for (const brand of brands) {
        for (const size of LOGO_SIZES) {
          for (const format of ['png', 'webp']) {
            const redirect = await fetch(
              `${api.url}/api/sdk/v1/catalog/brands/${brand.id}/logo?size=${size}&format=${format}`,
              { redirect: 'manual' },
            );
            expect(redirect.status).to.equal(307);
            const asset = await fetch(new URL(redirect.headers.get('location')!, api.url));
            expect(asset.headers.get('content-type')).to.equal(`image/${format}`);
            expect(await sharp(Buffer.from(await asset.arrayBuffer())).metadata()).to.include({
              format,
              width: size,
              height: size,
            });
          }
        }
      }
      const logo = `/api/sdk/v1/catalog/brands/${brands[0]!.id}/logo`;
      for (const query of ['?format=gif', '?format=PNG', '?format=webp&format=png'])
        expect((await api.request('GET', logo + query)).status, query).to.equal(400);
      // A snapshot written before WebP renditions (no `webp`) stays readable: format=webp gets the PNG.
      const old = brands.map((b) => ({ ...b, logo: b.logo && { kind: b.logo.kind, assets: b.logo.assets } }));
      const served = new CatalogService(
        { get: () => ({ snapshotId: 'old', index: BrandSearchIndex.build(old) }) } as unknown as ActiveCatalog,
        api.services.storage,
        { get: () => undefined, version: '0' },
        () => undefined,
      );
      expect(served.logoLocation(old[0]!.id, 256, 'webp'))
        .to.equal(served.logoLocation(old[0]!.id, 256, 'png'))
        .and.match(/\.png$/);
    });

    it('counts favicons standing in for failed logos as logos.fallback in the publish report', async () => {
      nock('https://example.org')
        .persist()
        .get(/\.(svg|png)$/)
        .reply(404)
        .get(/./)
        .reply(404);
      nock('https://ehpmadison.example.com').persist().get('/logo.png').reply(404);
      nock('https://ehr.example.com')
        .persist()
        .get('/')
        .reply(404)
        .get('/favicon.ico')
        .reply(200, ico([{ png: await png(48, '#0000ff') }]));
      const report = await publish(hl7(), true);
      expect(report.logos).to.include({ rendered: 1, fallback: 2, failed: 5 }); // ExampleLabs' data: URL; ExampleHealth's R4 and R2 share ehr.example.com
      expect(report.logos.reasons).to.include({ 'http-status': 5 });
    });
  });
});
