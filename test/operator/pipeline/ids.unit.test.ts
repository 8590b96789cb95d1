import { expect } from 'chai';
import { brandIdFor } from '../../../operator/src/pipeline/ids.js';
import { normaliseFhirBaseUrl } from '../../../operator/src/pipeline/normalise.js';
import { lanternFile, lanternFiles } from '../../../testkit/brand-data.js';

describe('operator pipeline: brand ids', () => {
  it('is the same id in every release for the same FHIR system (pinned values, = RFC 4648 base32 of SHA-256)', () => {
    // Changing these breaks every app that stored a brand id: ids must outlive code changes.
    expect(brandIdFor('https://api.platform.athenahealth.com/fhir/r4')).to.equal('by7w2a7daqozncvrtzrgpg33ojqmqumrq');
    expect(brandIdFor('https://fhir-myrecord.cerner.com/r4/-KzIoYV6gk-ILcHOWbsH2m9KsSdDgi12')).to.equal(
      'bbdut4gunccklvxpmeopk7l6zvjb7of54',
    );
  });

  it('is opaque, URL-safe, at most 64 characters and carries 160 bits', () => {
    const id = brandIdFor('https://fhir.example.org/r4');
    expect(id).to.match(/^b[a-z2-7]{32}$/);
    expect(encodeURIComponent(id)).to.equal(id);
    expect(id).to.not.contain('example');
  });

  it('does not depend on how the FHIR base URL was spelled', () => {
    const id = brandIdFor('https://hygieia.bronsonhg.org/FHIRProxy/api/FHIR/R4');
    for (const spelling of [
      'http://HYGIEIA.bronsonhg.org/FHIRProxy/api/FHIR/R4/',
      'https://hygieia.bronsonhg.org:443/FHIRProxy/api/FHIR/R4#x',
      'hygieia.bronsonhg.org/FHIRProxy/api/FHIR/R4',
    ]) {
      expect(brandIdFor(spelling), spelling).to.equal(id);
    }
    expect(brandIdFor('https://hygieia.bronsonhg.org/FHIRProxy/api/FHIR/DSTU2')).to.not.equal(id);
  });

  it('refuses a URL that identifies no FHIR system', () => {
    expect(() => brandIdFor('ftp://fhir.example.org')).to.throw(/not a usable FHIR base URL/);
    expect(() => brandIdFor('')).to.throw(/not a usable FHIR base URL/);
  });

  it('gives each of the 30,180 FHIR systems in the Lantern lists its own id', () => {
    const ids = new Map<string, string>();
    for (const file of lanternFiles()) {
      for (const { URL } of (JSON.parse(lanternFile(file)) as { Endpoints: { URL: string }[] }).Endpoints) {
        const identity = normaliseFhirBaseUrl(URL);
        if (identity === null || ids.has(identity)) continue;
        ids.set(identity, brandIdFor(identity));
      }
    }
    expect(ids.size).to.equal(30_180);
    expect(new Set(ids.values()).size).to.equal(ids.size);
  });
});
