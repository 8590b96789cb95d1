// The catalog with its artwork in S3 (a real S3-protocol server): the operator renders logos into the
// bucket, and the API redirects to them and serves them, with or without a public base URL.
import { expect } from 'chai';
import path from 'node:path';
import { repoRoot } from '#core/infra/repo-root.js';
import { importCatalogFile } from '../../../../operator/src/import-file.js';
import { TestApi } from '../../../../testkit/api.js';
import { testS3Bucket } from '../../../../testkit/s3.js';

describe('sdk: catalog artwork in S3', () => {
  let api: TestApi;
  let bucketUrl: string;
  before(async () => {
    const { endpoint, bucket } = await testS3Bucket();
    bucketUrl = `${endpoint}/${bucket}/`;
    api = await TestApi.start({
      env: {
        PORTICO_OBJECT_STORAGE: `s3://${bucket}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1&forcePathStyle=true`,
      },
    });
    const report = await importCatalogFile(path.join(repoRoot(), 'examples', 'demo', 'brandcatalog.yaml'), {
      store: api.services.snapshots,
      storage: api.services.storage,
      ref: api.config.catalog,
    });
    expect(report.logos.rendered).to.equal(18); // the demo brands and the sandbox EHR's two
    await api.services.activeCatalog.refresh();
  });
  after(() => api.close());

  it('redirects to the API asset path and serves the PNG from the bucket, immutable', async () => {
    const brand = (await api.request('GET', '/api/sdk/v1/catalog/brands?q=bayou%20regional%20medical')).body.brands[0];
    const redirect = await fetch(`${brand.logoUrl}?size=64`, { redirect: 'manual' });
    expect(redirect.status).to.equal(307);
    const location = redirect.headers.get('location')!;
    expect(location).to.match(/^\/api\/sdk\/v1\/catalog\/assets\/logo-[0-9a-f]{40}\.png$/);
    const asset = await fetch(new URL(location, api.url));
    expect(asset.status).to.equal(200);
    expect(asset.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
    const png = Buffer.from(await asset.arrayBuffer());
    expect(png.readUInt32BE(16)).to.equal(64);
    // The same bytes are in the bucket under that key.
    const direct = await fetch(`${bucketUrl}${location.split('/').pop()}`);
    expect(Buffer.from(await direct.arrayBuffer()).equals(png)).to.equal(true);
  });
});
