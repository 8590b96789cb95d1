import { expect } from 'chai';
import { mergeSources } from '../../../operator/src/pipeline/dedupe.js';
import { stateCode } from '#core/catalog/states.js';
import { parseFhirEndpointBundle } from '../../../operator/src/pipeline/sources/fhir-endpoint-bundle.js';
import { brandFile, loaded } from '../../../testkit/brand-data.js';

const parse = (file: string) => parseFhirEndpointBundle(brandFile(file));

type Json = Record<string, unknown>;
const bundle = (...resources: Json[]): string =>
  JSON.stringify({ resourceType: 'Bundle', type: 'collection', entry: resources.map((resource) => ({ resource })) });
const containedEndpoint = (id: string, address: string, org: Json, managing: Json): Json => ({
  resourceType: 'Endpoint',
  id,
  status: 'active',
  address,
  contained: [{ resourceType: 'Organization', ...org }],
  managingOrganization: managing,
});

describe('operator pipeline: fhir-endpoint-bundle source', () => {
  describe('Oracle Health, current shape (Organization.endpoint → Endpoint/<id>)', () => {
    it('reads every patient endpoint with its organisation’s name, city, two-letter state and ZIP code', () => {
      const parsed = parse('oracle-health/millennium_patient_r4_endpoints.json');
      expect(parsed).to.include({ rejected: 0 });
      expect(parsed.rows).to.have.length(1_359);
      expect(parsed.rows[0]).to.deep.equal({
        name: 'Avery Lindqvist, MD',
        fhirBaseUrl: 'https://fhir-myrecord.cerner.com/r4/-0QmVw3sYt7LkPz2Hc9RaXe4NbJu5GdFi/',
        city: 'Santa Barbara',
        state: 'CA',
        postalCode: '93101',
      });
      // 45 rows repeat an earlier name, e.g. "Brightwater Health Partners" ×6, each its own tenant (as in
      // the real list the fixture stands for: test/fixtures/brands/SOURCES.md).
      expect(parsed.rows.length - new Set(parsed.rows.map((r) => r.name)).size).to.equal(45);
      expect(parsed.rows.filter((r) => r.name === 'Brightwater Health Partners')).to.have.length(6);
      expect(parsed.rows.every((r) => r.state !== undefined && /^[A-Z]{2}$/.test(r.state))).to.equal(true);
    });

    it('keeps every tenant a brand of its own: 1,359 URLs, all distinct, all CERNER', () => {
      const { brands, duplicatesMerged } = mergeSources([
        loaded('oracle-patient', parse('oracle-health/millennium_patient_r4_endpoints.json')),
      ]);
      expect(brands).to.have.length(1_359);
      expect(duplicatesMerged).to.equal(0);
      expect(new Set(brands.map((b) => b.platformType))).to.deep.equal(new Set(['CERNER']));
    });

    it('keeps the organisations’ valid NPIs (patient list: 74 on 30 rows; provider list: 125, one invalid dropped)', () => {
      const patient = parse('oracle-health/millennium_patient_r4_endpoints.json');
      const withNpis = patient.rows.filter((r) => r.npis !== undefined);
      expect(withNpis).to.have.length(30);
      expect(withNpis.flatMap((r) => r.npis)).to.have.length(74);
      expect(withNpis[0]).to.deep.include({
        name: 'Okafor, T J MD',
        npis: ['2445107693'],
        postalCode: '32244',
        city: 'Jacksonville',
        state: 'FL',
      });
      const provider = parse('oracle-health/millennium_provider_r4_endpoints.json');
      expect(provider.rejected).to.equal(0);
      const npis = provider.rows.flatMap((r) => r.npis ?? []);
      expect(npis).to.have.length(125);
      expect(npis).to.not.include('2665900620'); // the list's one NPI that fails the check digit
      // 3 of 1,359 patient rows have no known ZIP code (Puerto Rico's: GeoNames lacks them); the rows are kept.
      expect(patient.rows.filter((r) => r.postalCode === undefined)).to.have.length(3);
      expect(patient.rows.every((r) => r.postalCode === undefined || /^\d{5}$/.test(r.postalCode))).to.equal(true);
    });

    it('reads the provider (1,451) and Soarian (7) lists', () => {
      expect(parse('oracle-health/millennium_provider_r4_endpoints.json').rows).to.have.length(1_451);
      const soarian = parse('oracle-health/soarian_patient_r4_endpoints.json');
      expect(soarian.rows).to.have.length(7);
      expect(soarian.rows.map((r) => r.name)).to.include('Soarian Test Tenant (Sandbox)');
    });
  });

  describe('Oracle Health 2023 shape (contained Organization, managingOrganization {id: "#…"})', () => {
    it('reads all 1,652 endpoints and their full-name states, which normalise to codes', () => {
      const parsed = parse('oracle-health-legacy-2023/millennium_patient_r4_endpoints.json');
      expect(parsed).to.include({ rejected: 0 });
      expect(parsed.rows).to.have.length(1_652);
      expect(parsed.rows[0]).to.include({
        name: 'Avery Lindqvist, MD',
        city: 'Santa Barbara',
        state: 'California',
        postalCode: '93101',
      });
      // This shape writes ZIP+4 ("32244-…"); the row keeps the five-digit ZIP code.
      expect(parsed.rows[1]).to.include({ name: 'Okafor, T J MD', postalCode: '32244' });
      // The rest have none, a foreign one, or one that is no ZIP code ("6504", "…?", Puerto Rico's).
      expect(parsed.rows.filter((r) => r.postalCode !== undefined)).to.have.length(1_640);
      expect(parsed.rows.length - new Set(parsed.rows.map((r) => r.name)).size).to.equal(117);
      const { brands } = mergeSources([loaded('oracle-2023', parsed)]);
      expect(brands).to.have.length(1_652);
      const first = brands.find((b) => b.name === 'Avery Lindqvist, MD');
      expect(first).to.include({
        state: 'CA',
        city: 'Santa Barbara',
        fhirBaseUrl: 'https://fhir-myrecord.cerner.com/r4/-0QmVw3sYt7LkPz2Hc9RaXe4NbJu5GdFi',
      });
      const statesGiven = parsed.rows.filter((r) => r.state !== undefined);
      expect(statesGiven.filter((r) => stateCode(r.state!) === undefined)).to.deep.equal([]);
    });
  });

  describe('Epic’s deprecated endpoint lists (contained Organization, managingOrganization without "#")', () => {
    it('R4: 316 endpoints on 304 FHIR systems; Harrowgate’s seven organisations become one brand', () => {
      const parsed = parse('epic-legacy-2022/epic_endpoints_r4.json');
      expect(parsed).to.include({ rejected: 0 });
      expect(parsed.rows).to.have.length(316);
      expect(parsed.rows[0]).to.deep.equal({
        name: 'Summit Ridge Health – Georgia',
        fhirBaseUrl: 'https://fhir.summitridge.example/services/patient-care/FhirRouting/v2015/env/200/api/FHIR/R4/',
      });
      const { brands, duplicatesMerged } = mergeSources([loaded('epic-r4', parsed, { platformType: 'EPIC' })]);
      expect(brands).to.have.length(304);
      expect(duplicatesMerged).to.equal(12);
      const harrowgate = brands.filter((b) => b.fhirBaseUrl.startsWith('https://epicproxy.harrowgatehg.example/'));
      expect(harrowgate).to.have.length(1);
      expect(harrowgate[0]).to.deep.include({
        fhirBaseUrl: 'https://epicproxy.harrowgatehg.example/FHIRProxy/api/FHIR/R4',
        // The name that matches the host (harrowgatehg), not the list's first organisation.
        name: 'Harrowgate Healthcare Group',
        platformType: 'EPIC',
      });
      expect(harrowgate[0]!.aliases).to.deep.equal([
        'Bayshore Ear, Nose & Throat – Wexford',
        'Lakeshore Family Health Center',
        'Lakeshore Medical School Clinics',
        'Nephrology Associates - Northern Michigan',
        'Wexford Community College Health Service',
        'Wexford Foot Surgery',
      ]);
    });

    it('DSTU2: 418 endpoints on 405 FHIR systems', () => {
      const parsed = parse('epic-legacy-2022/epic_endpoints_r2.json');
      expect(parsed.rows).to.have.length(418);
      expect(mergeSources([loaded('epic-dstu2', parsed)]).brands).to.have.length(405);
    });
  });

  describe('pairings and rules beyond the vendor files', () => {
    it('resolves a standard "#id" contained reference and a reference to an Organization elsewhere in the Bundle', () => {
      const parsed = parseFhirEndpointBundle(
        bundle(
          containedEndpoint(
            'e1',
            'https://fhir.one.example/r4',
            { id: 'o1', name: 'One Health', alias: ['One'] },
            { reference: '#o1' },
          ),
          {
            resourceType: 'Endpoint',
            id: 'e2',
            status: 'active',
            address: 'https://fhir.two.example/r4',
            managingOrganization: { reference: 'Organization/o2' },
          },
          {
            resourceType: 'Organization',
            id: 'o2',
            name: 'Two Health',
            address: [{ city: 'Dover', state: 'Delaware', country: 'USA' }],
          },
        ),
      );
      expect(parsed.rejected).to.equal(0);
      expect(parsed.rows).to.deep.equal([
        { name: 'One Health', fhirBaseUrl: 'https://fhir.one.example/r4', aliases: ['One'] },
        { name: 'Two Health', fhirBaseUrl: 'https://fhir.two.example/r4', city: 'Dover', state: 'Delaware' },
      ]);
    });

    it('falls back to Endpoint.name without an Organization, and rejects an Endpoint with neither', () => {
      const parsed = parseFhirEndpointBundle(
        bundle(
          {
            resourceType: 'Endpoint',
            id: 'named',
            status: 'active',
            name: 'Named Clinic',
            address: 'https://fhir.named.example/r4',
          },
          { resourceType: 'Endpoint', id: 'anon', status: 'active', address: 'https://fhir.anon.example/r4' },
        ),
      );
      expect(parsed.rows.map((r) => r.name)).to.deep.equal(['Named Clinic']);
      expect(parsed.rejected).to.equal(1);
      expect(parsed.rejections[0]).to.match(/Endpoint\/anon: no name/);
    });

    it('skips inactive Endpoints and Endpoints that only serve inactive Organizations', () => {
      const parsed = parseFhirEndpointBundle(
        bundle(
          { resourceType: 'Endpoint', id: 'off', status: 'off', name: 'Off', address: 'https://fhir.off.example/r4' },
          containedEndpoint(
            'closed',
            'https://fhir.closed.example/r4',
            { id: 'c', name: 'Closed', active: false },
            { reference: '#c' },
          ),
          containedEndpoint('open', 'https://fhir.open.example/r4', { id: 'o', name: 'Open' }, { reference: '#o' }),
        ),
      );
      expect(parsed.rows.map((r) => r.name)).to.deep.equal(['Open']);
      expect(parsed.rejected).to.equal(0);
    });

    it('rejects an Organization whose Endpoint is missing, and an unusable address', () => {
      const parsed = parseFhirEndpointBundle(
        bundle(
          { resourceType: 'Organization', id: 'lost', name: 'Lost Clinic', endpoint: [{ reference: 'Endpoint/none' }] },
          containedEndpoint('rel', 'api/clinic/R4', { id: 'r', name: 'Relative Clinic' }, { reference: '#r' }),
        ),
      );
      expect(parsed.rows).to.deep.equal([]);
      expect(parsed.rejected).to.equal(2);
      expect(parsed.rejections.join('\n'))
        .to.match(/Lost Clinic.*Endpoint\/none is not in the bundle/)
        .and.match(/"api\/clinic\/R4" is not an absolute http\(s\) URL/);
    });

    it('keeps NPI identifiers that check out and a known US ZIP code, ignoring the rest without rejecting the row', () => {
      const npi = (value: unknown, system = 'http://hl7.org/fhir/sid/us-npi') => ({ system, value });
      const parsed = parseFhirEndpointBundle(
        bundle(
          containedEndpoint(
            'e1',
            'https://fhir.one.example/r4',
            {
              id: 'o1',
              name: 'One Health',
              identifier: [
                npi('1234567893'),
                npi('1234567890'),
                npi('1992856819', 'urn:oid:2.16.840.1.113883.4.6'),
                npi('1234567893'),
                npi(1992856819),
                'junk',
              ],
              address: [{ city: 'Madison', state: 'WI', postalCode: '53703-1234', country: 'USA' }],
            },
            { reference: '#o1' },
          ),
          containedEndpoint(
            'e2',
            'https://fhir.two.example/r4',
            {
              id: 'o2',
              name: 'Two Health',
              identifier: npi('1234567893'),
              address: [{ city: 'Toronto', state: 'ON', postalCode: 'M5V 2T6', country: 'Canada' }],
            },
            { reference: '#o2' },
          ),
          containedEndpoint(
            'e3',
            'https://fhir.three.example/r4',
            {
              id: 'o3',
              name: 'Three Health',
              address: [{ state: 'WI', postalCode: '5370' }, { postalCode: '00000' }],
            },
            { reference: '#o3' },
          ),
          containedEndpoint(
            'e4',
            'https://fhir.four.example/r4',
            { id: 'o4', name: 'Four Health', address: [{ postalCode: '10001' }] },
            { reference: '#o4' },
          ),
        ),
      );
      expect(parsed.rejected).to.equal(0);
      expect(parsed.rows).to.deep.equal([
        {
          name: 'One Health',
          fhirBaseUrl: 'https://fhir.one.example/r4',
          city: 'Madison',
          state: 'WI',
          npis: ['1234567893', '1992856819'],
          postalCode: '53703',
        },
        // Identifier is 0..*: a lone object is not a list. A Canadian postal code is not a ZIP code.
        { name: 'Two Health', fhirBaseUrl: 'https://fhir.two.example/r4', city: 'Toronto' },
        { name: 'Three Health', fhirBaseUrl: 'https://fhir.three.example/r4', state: 'WI' },
        { name: 'Four Health', fhirBaseUrl: 'https://fhir.four.example/r4', postalCode: '10001' },
      ]);
    });

    it('throws when the text is not a FHIR Bundle', () => {
      expect(() => parseFhirEndpointBundle('{"Endpoints":[]}')).to.throw(
        /fhir-endpoint-bundle: expected a FHIR Bundle/,
      );
      expect(() => parseFhirEndpointBundle('')).to.throw(/fhir-endpoint-bundle: the source is not JSON/);
    });
  });
});
