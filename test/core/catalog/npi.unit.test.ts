// NPI validation: ten digits and CMS's Luhn check over 80840 + the first nine.
import { expect } from 'chai';
import { isValidNpi, validNpi } from '#core/catalog/npi.js';
import { brandFile, lanternFile } from '../../../testkit/brand-data.js';

describe('core: NPI validation', () => {
  it('accepts CMS’s worked example and rejects every other check digit', () => {
    // CMS's example: 123456789 → check digit 3.
    expect(isValidNpi('1234567893')).to.equal(true);
    for (let d = 0; d <= 9; d++) if (d !== 3) expect(isValidNpi(`123456789${d}`), String(d)).to.equal(false);
  });

  it('accepts every NPI in the MEDHOST Lantern list (138 rows carry one)', () => {
    const npis = (
      JSON.parse(lanternFile('MEDHOST_EndpointSources.json')) as { Endpoints: { NPIID: string }[] }
    ).Endpoints.map((e) => e.NPIID).filter((n) => n !== '');
    expect(npis).to.have.length(138);
    expect(npis.filter((n) => !isValidNpi(n))).to.deep.equal([]);
  });

  it('finds the one invalid NPI among the 200 identifiers of the Oracle Health patient and provider bundles (synthetic, as the real ones)', () => {
    const npisIn = (file: string) =>
      [...brandFile(file).matchAll(/"system":\s*"http:\/\/hl7\.org\/fhir\/sid\/us-npi",\s*"value":\s*"(\d*)"/g)].map(
        (m) => m[1]!,
      );
    const npis = [
      ...npisIn('oracle-health/millennium_patient_r4_endpoints.json'),
      ...npisIn('oracle-health/millennium_provider_r4_endpoints.json'),
    ];
    expect(npis).to.have.length(200);
    expect(npis.filter((n) => !isValidNpi(n))).to.deep.equal(['2665900620']);
  });

  it('rejects anything but ten digits, and a single-digit typo or a swap of two digits', () => {
    for (const text of [
      '',
      '123456789',
      '12345678933',
      '123456789a',
      ' 1234567893',
      '1234567893 ',
      '１２３４５６７８９３',
      '+234567893',
    ]) {
      expect(isValidNpi(text), JSON.stringify(text)).to.equal(false);
    }
    expect(isValidNpi('1992856819')).to.equal(true); // MEDHOST's first
    expect(isValidNpi('1992856818')).to.equal(false);
    expect(isValidNpi('1992856189')).to.equal(false);
  });

  it('reads what sources write: trimmed strings and JSON numbers, nothing else', () => {
    expect(validNpi(' 1234567893 ')).to.equal('1234567893');
    expect(validNpi(1234567893)).to.equal('1234567893');
    for (const value of [1234567890, 1234567893.5, -1234567893, '1234567890', null, undefined, {}, ['1234567893']]) {
      expect(validNpi(value), JSON.stringify(value)).to.equal(undefined);
    }
  });
});
