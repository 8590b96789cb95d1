// The SDK's generated types (sdk/js/src/schema.ts) are those of the document the API serves: a change to a
// route's schema that is not regenerated into the SDK fails here.
import { expect } from 'chai';
import { TestApi } from '../../testkit/api.js';
import { committedSchema, publicOpenApiDocument, renderSchema } from './support/openapi-schema.js';

describe('sdk/js: the generated schema', () => {
  let api: TestApi;
  let served: any;

  before(async () => {
    // No admin token: the public document (platform and SDK surfaces), as the SDK's types describe it.
    api = await TestApi.start({ env: { PORTICO_ADMIN_TOKEN: '' } });
    const res = await api.request('GET', '/openapi.json');
    expect(res.status).to.equal(200);
    served = res.body;
  });
  after(() => api.close());

  it('is generated from the document a real API serves (the in-process document the script uses is that one)', async () => {
    expect(Object.keys(served.paths).some((path) => path.startsWith('/api/admin/'))).to.be.false;
    expect(await publicOpenApiDocument()).to.deep.equal(served);
  });

  it('is up to date: sdk/js/src/schema.ts is what openapi-typescript makes of the served document', async () => {
    const expected = await renderSchema(served);
    const committed = await committedSchema();
    // A failure shows the first differing line, not two 100 KB strings.
    const [want, have] = [expected.split('\n'), committed.split('\n')];
    const line =
      Array.from({ length: Math.max(want.length, have.length) }, (_, i) => i).find((i) => want[i] !== have[i]) ?? 0;
    expect(
      committed === expected,
      `sdk/js/src/schema.ts is out of date (line ${line + 1}: expected ${JSON.stringify(want[line])}, ` +
        `found ${JSON.stringify(have[line])}): run \`npm run generate --prefix sdk/js\``,
    ).to.be.true;
  });
});
