import { expect } from 'chai';
import { SOURCE_FORMATS, parseSource, type SourceFormat } from '../../../operator/src/pipeline/index.js';

describe('operator pipeline: parseSource', () => {
  const samples: Record<SourceFormat, string> = {
    'smart-brands-bundle': JSON.stringify({
      resourceType: 'Bundle',
      type: 'collection',
      entry: [
        {
          resource: {
            resourceType: 'Organization',
            id: 'o',
            name: 'Smart Clinic',
            endpoint: [{ reference: 'Endpoint/e' }],
          },
        },
        { resource: { resourceType: 'Endpoint', id: 'e', status: 'active', address: 'https://fhir.smart.example/r4' } },
      ],
    }),
    'fhir-endpoint-bundle': JSON.stringify({
      resourceType: 'Bundle',
      type: 'collection',
      entry: [
        {
          resource: {
            resourceType: 'Endpoint',
            id: 'e',
            status: 'active',
            name: 'Vendor Clinic',
            address: 'https://fhir.vendor.example/r4',
          },
        },
      ],
    }),
    'lantern-endpoints': JSON.stringify({
      Endpoints: [
        {
          URL: 'https://fhir.lantern.example/r4',
          OrganizationName: 'Lantern Clinic',
          NPIID: '',
          OrganizationZipCode: '',
        },
      ],
    }),
    csv: 'name,fhirBaseUrl\nCsv Clinic,https://fhir.csv.example/r4\n',
  };

  for (const format of SOURCE_FORMATS) {
    it(`parses the ${format} format`, () => {
      const parsed = parseSource(format, samples[format]);
      expect(parsed.rejected).to.equal(0);
      expect(parsed.rows).to.have.length(1);
      expect(parsed.rows[0]!.fhirBaseUrl).to.match(/^https:\/\/fhir\.[a-z]+\.example\/r4$/);
    });
  }

  it('names the format when the text is in another one', () => {
    expect(() => parseSource('lantern-endpoints', samples.csv)).to.throw(/^lantern-endpoints: the source is not JSON/);
    expect(() => parseSource('smart-brands-bundle', samples['lantern-endpoints'])).to.throw(
      /^smart-brands-bundle: expected a FHIR Bundle/,
    );
  });

  it('refuses an unknown format', () => {
    expect(() => parseSource('xml' as SourceFormat, '<x/>')).to.throw(/unknown source format "xml"/);
  });
});
