// Search beyond exact words over HTTP, on the brand list fixtures published through the operator's pipeline (the
// Oracle Health bundle gives ZIP codes, MEDHOST's Lantern list NPIs): find by address and NPI, typos, near=<ZIP>,
// look-alike names, the status filter, and what each does to validation and caching.
import { expect } from 'chai';
import { distanceKm, zipCentroid } from '#core/catalog/geo.js';
import { TestApi } from '../../../../testkit/api.js';
import { publishTo, realSource, realSources } from '../../../../testkit/catalog.js';

const BASE = '/api/sdk/v1/catalog';

interface Shown {
  id: string;
  name: string;
  fhirBaseUrl: string;
  portalUrl: string | null;
  city: string | null;
  state: string | null;
  fuzzy: boolean;
  distanceKm?: number | null;
  disambiguation?: string;
  endpoint: { status: string };
}

describe('sdk: catalog search by address, NPI, typo and ZIP code (list fixtures)', () => {
  let api: TestApi;
  const search = async (query: string, headers: Record<string, string> = {}) =>
    api.request('GET', `${BASE}/brands?${query}`, { headers });
  const brandsOf = async (query: string): Promise<Shown[]> => {
    const res = await search(query);
    expect(res.status, query).to.equal(200);
    return res.body.brands as Shown[];
  };

  before(async () => {
    api = await TestApi.start();
    await publishTo(api, [
      ...realSources(),
      realSource('medhost', 'lantern-endpoints', 'lantern-prod_resources/MEDHOST_EndpointSources.json', 'MEDHOST', 30),
    ]);
  });
  after(() => api.close());

  it('finds a brand by an NPI its Lantern row carried', async () => {
    const [first] = await brandsOf('q=1083790893');
    expect(first).to.include({ name: 'ANTELOPE MEMORIAL HOSPITAL', fuzzy: false });
    // Ten digits that fail the check digit: not an NPI, searched as a word, found nowhere.
    expect(await brandsOf('q=1083790894')).to.deep.equal([]);
  });

  it('finds brands by their FHIR base URL or host, first', async () => {
    const url = 'https://fhir.yourcareuniverse.net/tenant/0ddc7794-d4a3-4d17-a674-9187af28aea6';
    expect((await brandsOf(`q=${encodeURIComponent(url)}`))[0]!.name).to.equal('ANTELOPE MEMORIAL HOSPITAL');
    const onHost = await brandsOf('q=fhir.yourcareuniverse.net&limit=100');
    expect(onHost.length).to.be.greaterThan(50);
    for (const brand of onHost) expect(brand.fhirBaseUrl).to.match(/^https:\/\/fhir\.yourcareuniverse\.net\//);
  });

  it('fills a short answer with typo matches, marked fuzzy, after the exact ones', async () => {
    const brands = await brandsOf('q=antelope%20memorail');
    expect(brands[0]).to.include({ name: 'ANTELOPE MEMORIAL HOSPITAL', fuzzy: true });
    const exactFirst = await brandsOf('q=acadian');
    const firstFuzzy = exactFirst.findIndex((b) => b.fuzzy);
    expect(exactFirst[0]).to.include({ fuzzy: false });
    if (firstFuzzy >= 0) expect(exactFirst.slice(firstFuzzy).every((b) => b.fuzzy)).to.equal(true);
  });

  it('orders by distance from a ZIP code with distanceKm, brands without a location last', async () => {
    const madison = zipCentroid('53703')!;
    const brands = await brandsOf('q=hospital&near=53703&limit=100');
    expect(brands).to.have.length(100);
    const distances = brands.map((b) => b.distanceKm);
    const placed = distances.filter((d): d is number => typeof d === 'number');
    expect(placed.length).to.be.greaterThan(10);
    expect(placed).to.deep.equal([...placed].sort((a, b) => a - b));
    expect(
      distances.indexOf(null) === -1 || distances.slice(distances.indexOf(null)).every((d) => d === null),
    ).to.equal(true);
    // The nearest is in Wisconsin, and its distance is what core's haversine gives for its ZIP centroid.
    expect(brands[0]!.state).to.equal('WI');
    expect(placed[0]).to.be.below(100);
    const alone = await brandsOf('near=53703&limit=5');
    expect(alone).to.have.length(5);
    expect(alone[0]!.distanceKm).to.be.at.most(placed[0]!);
    expect(madison.lat).to.be.within(43, 43.2);
    expect(distanceKm(madison, zipCentroid('60601')!)).to.be.within(190, 205); // Madison to Chicago's Loop
  });

  it('refuses a ZIP code it does not know or cannot read, and a status it does not know', async () => {
    for (const near of ['00000', '5370', '537031', 'abcde', '53703-1234']) {
      const res = await search(`q=hospital&near=${near}`);
      expect(res.status, near).to.equal(400);
      expect(res.body.details.errors[0].name, near).to.equal('near');
    }
    const res = await search('q=hospital&status=sideways');
    expect(res.status).to.equal(400);
    expect(res.body.details.errors[0].name).to.equal('status');
  });

  it('shows every endpoint as UNKNOWN before any check, and filters on status', async () => {
    expect(await brandsOf('q=hospital&status=UP')).to.deep.equal([]);
    const unknown = await brandsOf('q=hospital&status=unknown&limit=10');
    expect(unknown).to.have.length(10);
    for (const brand of unknown) expect(brand.endpoint.status).to.equal('UNKNOWN');
  });

  it('labels brands that share a name in one response', async () => {
    // Look-alikes: several Oracle Health systems publish the same organisation name (the fixture as the real list).
    const brands = await brandsOf('q=hospital&limit=100');
    const byName = new Map<string, Shown[]>();
    for (const brand of brands)
      byName.set(brand.name.toLowerCase(), [...(byName.get(brand.name.toLowerCase()) ?? []), brand]);
    for (const group of byName.values()) {
      if (group.length === 1) expect(group[0]!.disambiguation).to.equal(undefined);
      else expect(new Set(group.map((b) => b.disambiguation)).size, group[0]!.name).to.equal(group.length);
    }
  });

  it('gives each near and status its own ETag', async () => {
    const tags = new Set<string>();
    for (const query of ['q=hospital', 'q=hospital&near=53703', 'q=hospital&near=60601', 'q=hospital&status=unknown'])
      tags.add((await search(query)).headers.get('etag')!);
    expect(tags.size).to.equal(4);
  });
});
