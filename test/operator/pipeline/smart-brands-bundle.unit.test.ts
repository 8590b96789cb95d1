import { expect } from 'chai';
import { mergeSources } from '../../../operator/src/pipeline/dedupe.js';
import { parseSmartBrandsBundle } from '../../../operator/src/pipeline/sources/smart-brands-bundle.js';
import { brandFile, loaded } from '../../../testkit/brand-data.js';

const example = (n: number) => parseSmartBrandsBundle(brandFile(`smart-app-launch-examples/Bundle-example${n}.json`));

type Json = Record<string, unknown>;
const endpoint = (id: string, address: unknown, extra: Json = {}): Json => ({
  resourceType: 'Endpoint',
  id,
  status: 'active',
  address,
  ...extra,
});
const organization = (id: string, name: unknown, endpoints: string[], extra: Json = {}): Json => ({
  resourceType: 'Organization',
  id,
  active: true,
  name,
  endpoint: endpoints.map((e) => ({ reference: `Endpoint/${e}` })),
  ...extra,
});
const bundle = (...resources: Json[]): string =>
  JSON.stringify({ resourceType: 'Bundle', type: 'collection', entry: resources.map((resource) => ({ resource })) });

describe('operator pipeline: smart-brands-bundle source', () => {
  describe('the HL7 SMART App Launch examples', () => {
    it('example 1 (national lab): one brand with its aliases, first located address and its ZIP code, data: logo and portal', () => {
      const parsed = example(1);
      expect(parsed).to.include({ rejected: 0 });
      expect(parsed.rows).to.have.length(1);
      const [row] = parsed.rows;
      expect(row).to.include({
        name: 'ExampleLabs',
        fhirBaseUrl: 'https://fhir.labs.example.com/r4',
        city: 'Anchorage',
        state: 'AK',
        postalCode: '99508',
        portalUrl: 'https://healthcentral.labs.example.com',
      });
      // The example identifies the lab by its website, not by an NPI.
      expect(row).to.not.have.property('npis');
      expect(row!.aliases).to.deep.equal(['ExampleLabs Alaska', '...(more here)...', 'ExampleLabs Wisconsin']);
      expect(row!.logoUrl).to.match(/^data:image\/svg\+xml;utf8,<svg/);
    });

    it('example 2 (regional system): one row per endpoint; affiliates without endpoints become aliases', () => {
      const parsed = example(2);
      expect(parsed.rejected).to.equal(0);
      expect(parsed.rows.map((r) => r.fhirBaseUrl)).to.deep.equal([
        'https://ehr.example.com/ProdFHIR/api/FHIR/R2',
        'https://ehr.example.com/ProdFHIR/api/FHIR/R4',
      ]);
      for (const row of parsed.rows) {
        expect(row).to.include({
          name: 'ExampleHealth',
          city: 'Madison',
          state: 'WI',
          logoUrl: 'https://example.org/examplehealth/logo/main.1024x1024.png',
          portalUrl: 'https://example.org/examplehealth/patient-portal-url',
        });
        expect(row.aliases).to.deep.equal([
          'GoodHealth Hospital',
          'GoodHealth Mental Health',
          'ExampleHealth Community Hospital',
          'GoodHealth Madison',
          'ExampleHealth Physicians of Madison',
        ]);
      }
    });

    it('example 3 (two portals on two EHRs): each endpoint gets the portal that lists it (absolute references)', () => {
      const parsed = example(3);
      expect(parsed.rejected).to.equal(0);
      expect(parsed.rows.map((r) => [r.name, r.fhirBaseUrl, r.portalUrl, r.city, r.state])).to.deep.equal([
        [
          'ExampleHospital',
          'https://ehr1.example.org/ExampleHospital/api/FHIR/R4',
          'https://patientgateway.examplehospital.ehr1.example.org',
          'Boston',
          'MA',
        ],
        [
          'ExampleHospital',
          'https://ehr2.example.org/ExampleHospital/api/FHIR/R4',
          'https://pediatrics.examplehospital.ehr2.example.org',
          'Boston',
          'MA',
        ],
      ]);
      expect(parsed.rows[0]!.logoUrl).to.equal('https://example.org/examplehospital-ehr1/themes/custom/logo.svg');
    });

    it('example 4 (co-equal brands on one endpoint): two rows that merge into one brand named by the first', () => {
      const parsed = example(4);
      expect(parsed.rows.map((r) => r.name)).to.deep.equal(['Brand1', 'Brand2']);
      const { brands, duplicatesMerged } = mergeSources([loaded('example4', parsed)]);
      expect(duplicatesMerged).to.equal(1);
      expect(brands).to.have.length(1);
      expect(brands[0]).to.deep.include({
        name: 'Brand1',
        aliases: ['Umbrella Insurance', 'Brand2', 'Shield Insurance'],
        fhirBaseUrl: 'https://example.org/brand1.org/ProdFHIR/api/FHIR/R4',
        city: 'Napa',
        state: 'CA',
        portalUrl: 'https://example.org/chart.brand1.org',
        logoUrl: 'https://example.org/brand1/logo/main.svg',
      });
    });
  });

  describe('rules beyond the examples', () => {
    it('skips inactive Endpoints and Organizations without counting them as rejected', () => {
      const parsed = parseSmartBrandsBundle(
        bundle(
          organization('a', 'Active Health', ['a1', 'a2']),
          endpoint('a1', 'https://fhir.active.example/r4'),
          endpoint('a2', 'https://fhir.active.example/old', { status: 'off' }),
          organization('b', 'Retired Health', ['b1'], { active: false }),
          endpoint('b1', 'https://fhir.retired.example/r4'),
        ),
      );
      expect(parsed.rows.map((r) => r.fhirBaseUrl)).to.deep.equal(['https://fhir.active.example/r4']);
      expect(parsed.rejected).to.equal(0);
    });

    it('counts and explains what cannot become a row: no name, bad address, missing or orphan Endpoint', () => {
      const parsed = parseSmartBrandsBundle(
        bundle(
          organization('noname', '  ', ['e1']),
          endpoint('e1', 'https://fhir.one.example/r4'),
          organization('ftp', 'FTP Clinic', ['e2']),
          endpoint('e2', 'ftp://fhir.two.example/r4'),
          organization('missing', 'Missing Endpoint Clinic', ['nowhere']),
          organization('lonely', 'No Endpoint Clinic', []),
          endpoint('orphan', 'https://fhir.orphan.example/r4'),
          organization('ok', 'Fine Clinic', ['e3']),
          endpoint('e3', 'https://fhir.three.example/r4'),
        ),
      );
      expect(parsed.rows.map((r) => r.name)).to.deep.equal(['Fine Clinic']);
      expect(parsed.rejected).to.equal(5);
      expect(parsed.rejections).to.have.length(5);
      expect(parsed.rejections.join('\n'))
        .to.match(/no name/)
        .and.match(/ftp:/)
        .and.match(/Endpoint\/nowhere is not in the bundle/)
        .and.match(/No Endpoint Clinic.*references no Endpoint/)
        .and.match(/Endpoint\/orphan: no Organization references it/);
    });

    it('walks a partOf chain to the nearest brand with endpoints; an affiliate with its own endpoint keeps its own row', () => {
      const parsed = parseSmartBrandsBundle(
        bundle(
          organization('system', 'Northwind Health', ['sys']),
          endpoint('sys', 'https://fhir.northwind.example/r4'),
          organization('region', 'Northwind East', [], { partOf: { reference: 'Organization/system' } }),
          organization('clinic', 'Eastside Clinic', [], {
            partOf: { reference: 'Organization/region' },
            alias: ['Eastside Family Care'],
          }),
          organization('own', 'Northwind Labs', ['lab'], { partOf: { reference: 'Organization/system' } }),
          endpoint('lab', 'https://fhir.northwind-labs.example/r4'),
          organization('gone', 'Closed Clinic', [], { partOf: { reference: 'Organization/system' }, active: false }),
        ),
      );
      expect(parsed.rejected).to.equal(0);
      expect(parsed.rows.map((r) => [r.name, r.aliases])).to.deep.equal([
        ['Northwind Health', ['Northwind East', 'Eastside Clinic', 'Eastside Family Care']],
        ['Northwind Labs', undefined],
      ]);
    });

    it('keeps a brand’s valid NPIs and adds those of affiliates reached through it', () => {
      const npi = (value: string) => ({ system: 'http://hl7.org/fhir/sid/us-npi', value });
      const parsed = parseSmartBrandsBundle(
        bundle(
          organization('system', 'Northwind Health', ['a', 'b'], {
            identifier: [npi('1234567893'), npi('1234567890')],
          }),
          endpoint('a', 'https://fhir.northwind.example/r4'),
          endpoint('b', 'https://fhir.northwind.example/dstu2'),
          organization('clinic', 'Eastside Clinic', [], {
            partOf: { reference: 'Organization/system' },
            identifier: [npi('1992856819')],
          }),
          organization('lab', 'Northwind Lab', [], {
            partOf: { reference: 'Organization/system' },
            identifier: [npi('1992856818')],
          }),
        ),
      );
      expect(parsed.rows.map((r) => [r.fhirBaseUrl, r.aliases, r.npis])).to.deep.equal([
        ['https://fhir.northwind.example/r4', ['Eastside Clinic', 'Northwind Lab'], ['1234567893', '1992856819']],
        ['https://fhir.northwind.example/dstu2', ['Eastside Clinic', 'Northwind Lab'], ['1234567893', '1992856819']],
      ]);
    });

    it('reaches Endpoints listed only as a portal endpoint, and falls back to the portal logo', () => {
      const portal = {
        url: 'http://hl7.org/fhir/StructureDefinition/organization-portal',
        extension: [
          { url: 'portalUrl', valueUrl: 'https://mychart.portal.example' },
          { url: 'portalLogo', valueUrl: 'https://mychart.portal.example/logo.svg' },
          { url: 'portalEndpoint', valueReference: { reference: 'Endpoint/p' } },
        ],
      };
      const parsed = parseSmartBrandsBundle(
        bundle(
          organization('o', 'Portal Only Health', [], { extension: [portal] }),
          endpoint('p', 'https://fhir.portal.example/r4'),
        ),
      );
      expect(parsed.rows).to.deep.equal([
        {
          name: 'Portal Only Health',
          fhirBaseUrl: 'https://fhir.portal.example/r4',
          portalUrl: 'https://mychart.portal.example',
          logoUrl: 'https://mychart.portal.example/logo.svg',
        },
      ]);
    });

    it('resolves relative references against the referrer’s server when two servers reuse an id', () => {
      const text = JSON.stringify({
        resourceType: 'Bundle',
        type: 'collection',
        entry: [
          { fullUrl: 'https://a.example/fhir/Endpoint/main', resource: endpoint('main', 'https://fhir.a.example/r4') },
          { fullUrl: 'https://b.example/fhir/Endpoint/main', resource: endpoint('main', 'https://fhir.b.example/r4') },
          { fullUrl: 'https://b.example/fhir/Organization/b', resource: organization('b', 'Brand B', ['main']) },
        ],
      });
      const parsed = parseSmartBrandsBundle(text);
      expect(parsed.rows.map((r) => r.fhirBaseUrl)).to.deep.equal(['https://fhir.b.example/r4']);
      // The orphaned endpoint on server A is reported, not silently dropped.
      expect(parsed.rejected).to.equal(1);
    });

    it('does not take a state from an address outside the US', () => {
      const parsed = parseSmartBrandsBundle(
        bundle(
          organization('o', 'Perth Clinic', ['e'], { address: [{ city: 'Perth', state: 'WA', country: 'AU' }] }),
          endpoint('e', 'https://fhir.perth.example/r4'),
        ),
      );
      expect(parsed.rows[0]).to.include({ city: 'Perth' }).and.not.have.property('state');
    });

    const malformed: [string, string, RegExp][] = [
      ['text that is not JSON', '<html>not found</html>', /smart-brands-bundle: the source is not JSON/],
      ['JSON that is not a Bundle', '{"resourceType":"Organization"}', /expected a FHIR Bundle/],
      ['a JSON array', '[]', /expected a FHIR Bundle/],
      [
        'a Bundle whose entry is not an array',
        '{"resourceType":"Bundle","entry":{}}',
        /Bundle\.entry must be an array/,
      ],
    ];
    for (const [what, text, message] of malformed) {
      it(`throws on ${what}`, () => expect(() => parseSmartBrandsBundle(text)).to.throw(message));
    }

    it('accepts an empty Bundle', () => {
      expect(parseSmartBrandsBundle('{"resourceType":"Bundle","type":"collection"}')).to.deep.equal({
        rows: [],
        rejected: 0,
        rejections: [],
      });
    });
  });
});
