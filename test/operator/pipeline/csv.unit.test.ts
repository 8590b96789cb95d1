import { expect } from 'chai';
import { MAX_REJECTION_REASONS } from '../../../operator/src/pipeline/sources/collector.js';
import { parseCsv } from '../../../operator/src/pipeline/sources/csv.js';
import { csvField } from '../../../testkit/brand-data.js';

describe('operator pipeline: csv source', () => {
  it('reads quoted fields with commas, doubled quotes and line breaks, columns in any order, BOM and CRLF', () => {
    const text = [
      '\uFEFFaliases,state,fhirBaseUrl,name,city,platformType,portalUrl,logoUrl',
      '"St. Mary\'s|Saint Mary\'s, Albany",NY,https://fhir.stmarys.example/r4,"St. Mary\'s Regional Health, Albany",Albany,EPIC,https://mychart.stmarys.example,https://stmarys.example/logo.svg',
      '"The ""Good"" Clinic",wisconsin,http://FHIR.Good.example/R4/,"Good ""Family""\r\nClinic","Madison",cerner,,',
      ',,https://fhir.plain.example/r4,Plain Clinic,,,,',
    ].join('\r\n');
    const parsed = parseCsv(text);
    expect(parsed).to.include({ rejected: 0 });
    expect(parsed.rows).to.deep.equal([
      {
        name: "St. Mary's Regional Health, Albany",
        fhirBaseUrl: 'https://fhir.stmarys.example/r4',
        platformType: 'EPIC',
        aliases: ["St. Mary's", "Saint Mary's, Albany"],
        city: 'Albany',
        state: 'NY',
        portalUrl: 'https://mychart.stmarys.example',
        logoUrl: 'https://stmarys.example/logo.svg',
      },
      // The line break inside the quoted name is kept by the parser and collapsed like any other whitespace.
      {
        name: 'Good "Family" Clinic',
        fhirBaseUrl: 'http://FHIR.Good.example/R4/',
        platformType: 'CERNER',
        aliases: ['The "Good" Clinic'],
        city: 'Madison',
        state: 'wisconsin',
      },
      { name: 'Plain Clinic', fhirBaseUrl: 'https://fhir.plain.example/r4' },
    ]);
  });

  it('needs only name and fhirBaseUrl, reads LF files, skips blank lines and ignores unknown columns', () => {
    const parsed = parseCsv('fhirBaseUrl,npi,name\n\nhttps://fhir.a.example/r4,1234567893,A Clinic\n\n');
    expect(parsed.rows).to.deep.equal([{ name: 'A Clinic', fhirBaseUrl: 'https://fhir.a.example/r4' }]);
  });

  it('round-trips any value quoted the RFC 4180 way', () => {
    const awkward = ['Quote " inside', 'Comma, inside', 'Line\nbreak', '"Fully quoted"', 'Trailing |pipe'];
    const lines = awkward.map((name, i) => [csvField(name), `https://fhir.x${i}.example/r4`].join(','));
    const parsed = parseCsv(['name,fhirBaseUrl', ...lines].join('\r\n'));
    expect(parsed.rows.map((r) => r.name)).to.deep.equal([
      'Quote " inside',
      'Comma, inside',
      'Line break',
      '"Fully quoted"',
      'Trailing |pipe',
    ]);
  });

  it('rejects and counts bad rows (with their line) without failing the file', () => {
    const text = [
      'name,fhirBaseUrl,platformType',
      'Good Clinic,https://fhir.good.example/r4,',
      'Typo Clinic,https://fhir.typo.example/r4,EPICC',
      ',https://fhir.nameless.example/r4,',
      'Relative Clinic,api/clinic/R4,',
      'Extra Clinic,https://fhir.extra.example/r4,EPIC,surplus',
      'Short Clinic,https://fhir.short.example/r4',
      'FTP Clinic,ftp://fhir.ftp.example/r4,',
    ].join('\n');
    const parsed = parseCsv(text);
    expect(parsed.rows.map((r) => r.name)).to.deep.equal(['Good Clinic', 'Short Clinic']);
    expect(parsed.rejected).to.equal(5);
    expect(parsed.rejections).to.have.length(MAX_REJECTION_REASONS);
    expect(parsed.rejections).to.deep.equal([
      'line 3: unknown platformType "EPICC"',
      'line 4: no name',
      'line 5 (Relative Clinic): "api/clinic/R4" is not an absolute http(s) URL',
      'line 6: 4 fields where the header has 3',
      'line 8 (FTP Clinic): "ftp://fhir.ftp.example/r4" is not an absolute http(s) URL',
    ]);
  });

  it('keeps at most five reasons however many rows are rejected', () => {
    const lines = Array.from({ length: 40 }, (_, i) => `,https://fhir.n${i}.example/r4`);
    const parsed = parseCsv(['name,fhirBaseUrl', ...lines].join('\n'));
    expect(parsed.rejected).to.equal(40);
    expect(parsed.rejections).to.have.length(5);
  });

  const malformed: [string, string, RegExp][] = [
    ['an empty text', '', /csv: the source is empty/],
    ['a header without fhirBaseUrl', 'name,url\nA,https://a.example', /lacks "fhirBaseUrl"/],
    ['a header without either required column', 'title,url\n', /lacks "name" and "fhirBaseUrl"/],
    ['a header naming a column twice', 'name,fhirBaseUrl,Name\n', /names the column "name" twice/],
    [
      'an unterminated quoted field',
      'name,fhirBaseUrl\n"Open quote,https://a.example\n',
      /csv: the source is not valid CSV/,
    ],
  ];
  for (const [what, text, message] of malformed) {
    it(`throws on ${what}`, () => expect(() => parseCsv(text)).to.throw(message));
  }
});
