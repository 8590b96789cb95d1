import { expect } from 'chai';
import { mergeSources } from '../../../operator/src/pipeline/dedupe.js';
import { normaliseFhirBaseUrl } from '../../../operator/src/pipeline/normalise.js';
import { parseLanternEndpoints } from '../../../operator/src/pipeline/sources/lantern-endpoints.js';
import { lanternFile, loaded } from '../../../testkit/brand-data.js';

const parse = (file: string) => parseLanternEndpoints(lanternFile(file));
type RawEndpoint = { URL: string; OrganizationName: string; NPIID?: string; OrganizationZipCode?: string };
const rawEndpoints = (file: string) => (JSON.parse(lanternFile(file)) as { Endpoints: RawEndpoint[] }).Endpoints;

describe('operator pipeline: lantern-endpoints source', () => {
  it('athenahealth: 17,136 practices on one FHIR system collapse to one ATHENAHEALTH brand, named after the vendor', () => {
    const parsed = parse('athenahealth_Inc_EndpointSources.json');
    expect(parsed.rows).to.have.length(17_136);
    expect(parsed.rejected).to.equal(0);
    expect(parsed.rows[0]).to.deep.equal({
      name: 'NC - Sollus Pediatrics',
      fhirBaseUrl: 'https://api.platform.athenahealth.com/fhir/r4',
    });
    const { brands, duplicatesMerged } = mergeSources([loaded('athenahealth', parsed)]);
    expect(brands).to.have.length(1);
    expect(duplicatesMerged).to.equal(17_135);
    const [athena] = brands;
    expect(athena).to.include({
      fhirBaseUrl: 'https://api.platform.athenahealth.com/fhir/r4',
      platformType: 'ATHENAHEALTH',
      name: 'athenahealth practices',
    });
    // The first 50 practice names stay searchable, once each, whatever their case.
    expect(athena!.aliases).to.have.length(50);
    expect(new Set(athena!.aliases.map((a) => a.toLowerCase())).size).to.equal(50);
    expect(athena!.aliases).to.include.members(['NC - Sollus Pediatrics', 'KY - Scott & Jonah Mds']);
  });

  it('1Up: 6,810 rows, the 2 without a name rejected, 6,782 FHIR systems, and no state taken from a zip code', () => {
    const parsed = parse('1UpEndpointSources.json');
    expect(parsed.rows.length + parsed.rejected).to.equal(6_810);
    expect(parsed.rejected).to.equal(2);
    expect(parsed.rejections).to.deep.equal(['Endpoints[0]: no name', 'Endpoints[1]: no name']);
    expect(new Set(rawEndpoints('1UpEndpointSources.json').map((e) => normaliseFhirBaseUrl(e.URL))).size).to.equal(
      6_782,
    );
    // Both unnamed rows are on URLs nobody else names, so they are lost with the rows.
    expect(mergeSources([loaded('1up', parsed)]).brands).to.have.length(6_780);
    expect(parsed.rows.filter((r) => r.state !== undefined || r.city !== undefined)).to.deep.equal([]);
  });

  it('Altera: variants differing only in scheme, host case or a slash merge; path case keeps systems apart', () => {
    const file = 'Altera_Digital_Health_Inc_EndpointSources.json';
    const raw = rawEndpoints(file).map((e) => e.URL);
    expect(new Set(raw).size).to.equal(1_045);
    const identities = new Set(raw.map(normaliseFhirBaseUrl));
    expect(identities.size).to.equal(1_030);
    // SOURCES.md's 989 also lower-cases paths; this identity keeps /FHIR and /fhir apart (41 such pairs here).
    expect(new Set([...identities].map((u) => u!.toLowerCase())).size).to.equal(989);
    const inscm60 = raw.filter((u) => u.toLowerCase().includes('inscmqaes60.rd.allscripts.com/fhir'));
    expect(new Set(inscm60).size).to.be.greaterThan(1);
    expect(new Set(inscm60.map(normaliseFhirBaseUrl))).to.deep.equal(
      new Set(['https://inscmqaes60.rd.allscripts.com/FHIR']),
    );

    const parsed = parse(file);
    expect(parsed.rejected).to.equal(20);
    const { brands } = mergeSources([loaded('altera', parsed, { platformType: 'ALTERA' })]);
    expect(brands).to.have.length(1_022);
    const testClinic = brands.filter((b) => b.fhirBaseUrl === 'https://testclinic.com/fhir');
    expect(testClinic).to.have.length(1);
    expect(testClinic[0]!.aliases).to.include.members(['A - UK Test Clinic', 'A - US Test Clinic']);
    expect(testClinic[0]!.platformType).to.equal('ALTERA');
  });

  it('Epic’s R4 list: 477 rows on 450 FHIR systems (Harrowgate Healthcare Group and Wexford Foot Surgery share one)', () => {
    const { brands } = mergeSources([loaded('epic', parse('Epic_Systems_Corporation_1_EndpointSources.json'))]);
    expect(brands).to.have.length(450);
    const harrowgate = brands.filter((b) => [b.name, ...b.aliases].some((n) => /Wexford Foot Surgery/.test(n)));
    expect(harrowgate).to.have.length(1);
    expect(
      [harrowgate[0]!.name, ...harrowgate[0]!.aliases].some((n) => /^Harrowgate Healthcare Group$/.test(n)),
    ).to.equal(true);
  });

  it('MEDHOST: keeps the NPIID of 138 of 140 rows (the other two carry none); every one checks out', () => {
    const parsed = parse('MEDHOST_EndpointSources.json');
    expect(parsed.rejected).to.equal(0);
    expect(parsed.rows.filter((r) => r.npis !== undefined)).to.have.length(138);
    expect(parsed.rows[0]).to.deep.equal({
      name: 'AHS Vista Health System - East',
      fhirBaseUrl: 'https://fhir.yourcareuniverse.net/tenant/ed6a665c-b100-4cee-b23d-6197c0e9c9ee',
      npis: ['1992856819'],
    });
    const given = rawEndpoints('MEDHOST_EndpointSources.json').map((e) => e.NPIID ?? '');
    expect(parsed.rows.flatMap((r) => r.npis ?? [])).to.deep.equal(given.filter((n) => n !== ''));
  });

  it('Cerner and eClinicalWorks: keep the known 5-digit ZIP codes, ZIP+4 reduced; the malformed ones are dropped, not the rows', () => {
    const cerner = parse('Cerner_Corporation_EndpointSources.json');
    expect(cerner.rejected).to.equal(0);
    expect(cerner.rows).to.have.length(3_305);
    // The (synthetic) file: 3,297 rows carry a zip. Sixteen are not a known ZIP code, eight values each written
    // twice (once per R4 and DSTU2 endpoint): Bermuda's "PG04", Cayman's "KY1-1205", "6504" (a Connecticut ZIP that
    // lost its leading zero), "78615?", and four Puerto Rico codes (three ZIP+4, one nine digits without the dash),
    // which GeoNames' US file does not have.
    expect(cerner.rows.filter((r) => r.postalCode !== undefined)).to.have.length(3_281);
    const cernerZips = new Map(
      rawEndpoints('Cerner_Corporation_EndpointSources.json').map((e) => [e.URL, e.OrganizationZipCode]),
    );
    const zip4 = cerner.rows.filter((r) => /^\d{5}-\d{4}$/.test(cernerZips.get(r.fhirBaseUrl) ?? ''));
    expect(zip4.length).to.be.above(1_000);
    const reduced = zip4.filter((r) => r.postalCode === cernerZips.get(r.fhirBaseUrl)!.slice(0, 5));
    expect(zip4.filter((r) => !reduced.includes(r)).map((r) => cernerZips.get(r.fhirBaseUrl))).to.deep.equal([
      '00907-1095',
      '00907-5953',
      '00717-8291',
      '00907-1095',
      '00907-5953',
      '00717-8291',
    ]);
    for (const raw of ['PG04', 'KY1-1205', '6504', '78615?', '009614414']) {
      const row = cerner.rows.find((r) => cernerZips.get(r.fhirBaseUrl) === raw);
      expect(row, raw).to.not.equal(undefined);
      expect(row, raw).to.not.have.property('postalCode');
    }
    const ecw = parse('eClinicalWorks_LLC_EndpointSources.json');
    expect(ecw.rows.filter((r) => r.postalCode !== undefined)).to.have.length(2_203);
  });

  it('reads an NPIID written as a JSON number, and ignores NPIs that fail the check digit', () => {
    const parsed = parseLanternEndpoints(
      JSON.stringify({
        Endpoints: [
          { URL: 'https://fhir.a.example/r4', OrganizationName: 'A', NPIID: 1234567893, OrganizationZipCode: 53703 },
          { URL: 'https://fhir.b.example/r4', OrganizationName: 'B', NPIID: '1234567890', OrganizationZipCode: '5370' },
          {
            URL: 'https://fhir.c.example/r4',
            OrganizationName: 'C',
            NPIID: ' 1992856819 ',
            OrganizationZipCode: '537031234',
          },
          {
            URL: 'https://fhir.d.example/r4',
            OrganizationName: 'D',
            NPIID: null,
            OrganizationZipCode: { zip: '53703' },
          },
        ],
      }),
    );
    expect(parsed.rejected).to.equal(0);
    expect(parsed.rows.map((r) => [r.name, r.npis, r.postalCode])).to.deep.equal([
      ['A', ['1234567893'], '53703'],
      ['B', undefined, undefined],
      ['C', ['1992856819'], '53703'],
      ['D', undefined, undefined],
    ]);
  });

  it('counts entries that are not objects or lack a usable URL, without failing the list', () => {
    const parsed = parseLanternEndpoints(
      JSON.stringify({
        Endpoints: [
          {
            URL: 'https://fhir.ok.example/r4',
            OrganizationName: ' Good  Clinic ',
            NPIID: '1234567893',
            OrganizationZipCode: '53703',
          },
          'https://fhir.string.example/r4',
          { URL: 42, OrganizationName: 'Numeric URL' },
          { URL: 'api/relative/R4', OrganizationName: 'Relative URL' },
          { OrganizationName: 'No URL' },
        ],
      }),
    );
    expect(parsed.rows).to.deep.equal([
      { name: 'Good Clinic', fhirBaseUrl: 'https://fhir.ok.example/r4', npis: ['1234567893'], postalCode: '53703' },
    ]);
    expect(parsed.rejected).to.equal(4);
    expect(parsed.rejections).to.deep.equal([
      'Endpoints[1]: not an object',
      'Endpoints[2] (Numeric URL): no FHIR base URL',
      'Endpoints[3] (Relative URL): "api/relative/R4" is not an absolute http(s) URL',
      'Endpoints[4] (No URL): no FHIR base URL',
    ]);
  });

  it('throws on text that is not a Lantern list (including the empty upstream LanternEndpointSources.json)', () => {
    expect(() => parseLanternEndpoints(lanternFile('LanternEndpointSources.json'))).to.throw(
      /lantern-endpoints: the source is not JSON/,
    );
    expect(() => parseLanternEndpoints('{"Entries":[]}')).to.throw(/expected an object with an "Endpoints" array/);
    expect(() => parseLanternEndpoints('[]')).to.throw(/expected an object with an "Endpoints" array/);
  });
});
