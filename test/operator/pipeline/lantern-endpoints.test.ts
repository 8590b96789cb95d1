import { expect } from 'chai';
import { mergeSources } from '../../../operator/src/pipeline/dedupe.js';
import { normaliseFhirBaseUrl } from '../../../operator/src/pipeline/normalise.js';
import { parseLanternEndpoints } from '../../../operator/src/pipeline/sources/lantern-endpoints.js';
import { lanternFile, loaded } from '../../support/brand-data.js';

const parse = (file: string) => parseLanternEndpoints(lanternFile(file));
const rawEndpoints = (file: string) => (JSON.parse(lanternFile(file)) as { Endpoints: { URL: string; OrganizationName: string }[] }).Endpoints;

describe('operator pipeline: lantern-endpoints source', () => {
  it('athenahealth: 17,136 practices on one FHIR system collapse to one ATHENAHEALTH brand, named after the vendor', () => {
    const parsed = parse('athenahealth_Inc_EndpointSources.json');
    expect(parsed.rows).to.have.length(17_136);
    expect(parsed.rejected).to.equal(0);
    expect(parsed.rows[0]).to.deep.equal({ name: 'NC - Sollus Pediatrics', fhirBaseUrl: 'https://api.platform.athenahealth.com/fhir/r4' });
    const { brands, duplicatesMerged } = mergeSources([loaded('athenahealth', parsed)]);
    expect(brands).to.have.length(1);
    expect(duplicatesMerged).to.equal(17_135);
    const [athena] = brands;
    expect(athena).to.include({ fhirBaseUrl: 'https://api.platform.athenahealth.com/fhir/r4', platformType: 'ATHENAHEALTH', name: 'athenahealth practices' });
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
    expect(new Set(rawEndpoints('1UpEndpointSources.json').map((e) => normaliseFhirBaseUrl(e.URL))).size).to.equal(6_782);
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
    expect(new Set(inscm60.map(normaliseFhirBaseUrl))).to.deep.equal(new Set(['https://inscmqaes60.rd.allscripts.com/FHIR']));

    const parsed = parse(file);
    expect(parsed.rejected).to.equal(20);
    const { brands } = mergeSources([loaded('altera', parsed, { platformType: 'ALTERA' })]);
    expect(brands).to.have.length(1_022);
    const testClinic = brands.filter((b) => b.fhirBaseUrl === 'https://testclinic.com/fhir');
    expect(testClinic).to.have.length(1);
    expect(testClinic[0]!.aliases).to.include.members(['A - UK Test Clinic', 'A - US Test Clinic']);
    expect(testClinic[0]!.platformType).to.equal('ALTERA');
  });

  it('Epic’s R4 list: 477 rows on 450 FHIR systems (UCSF Health and UCSF Benioff Children’s share one)', () => {
    const { brands } = mergeSources([loaded('epic', parse('Epic_Systems_Corporation_1_EndpointSources.json'))]);
    expect(brands).to.have.length(450);
    const ucsf = brands.filter((b) => [b.name, ...b.aliases].some((n) => /UCSF Benioff/.test(n)));
    expect(ucsf).to.have.length(1);
    expect([ucsf[0]!.name, ...ucsf[0]!.aliases].some((n) => /^UCSF Health$/.test(n))).to.equal(true);
  });

  it('counts entries that are not objects or lack a usable URL, without failing the list', () => {
    const parsed = parseLanternEndpoints(JSON.stringify({
      Endpoints: [
        { URL: 'https://fhir.ok.example/r4', OrganizationName: ' Good  Clinic ', NPIID: '1234567893', OrganizationZipCode: '53703' },
        'https://fhir.string.example/r4',
        { URL: 42, OrganizationName: 'Numeric URL' },
        { URL: 'api/relative/R4', OrganizationName: 'Relative URL' },
        { OrganizationName: 'No URL' },
      ],
    }));
    expect(parsed.rows).to.deep.equal([{ name: 'Good Clinic', fhirBaseUrl: 'https://fhir.ok.example/r4' }]);
    expect(parsed.rejected).to.equal(4);
    expect(parsed.rejections).to.deep.equal([
      'Endpoints[1]: not an object',
      'Endpoints[2] (Numeric URL): no FHIR base URL',
      'Endpoints[3] (Relative URL): "api/relative/R4" is not an absolute http(s) URL',
      'Endpoints[4] (No URL): no FHIR base URL',
    ]);
  });

  it('throws on text that is not a Lantern list (including the empty upstream LanternEndpointSources.json)', () => {
    expect(() => parseLanternEndpoints(lanternFile('LanternEndpointSources.json'))).to.throw(/lantern-endpoints: the source is not JSON/);
    expect(() => parseLanternEndpoints('{"Entries":[]}')).to.throw(/expected an object with an "Endpoints" array/);
    expect(() => parseLanternEndpoints('[]')).to.throw(/expected an object with an "Endpoints" array/);
  });
});
