// Text from source lists is untrusted as well: a Bundle's references and a FHIR base URL's path are read in
// linear time, finding what the former regular expressions found (which took seconds on 100 kB).
import { expect } from 'chai';
import { normaliseFhirBaseUrl, withoutTrailingSlashes } from '../../../operator/src/pipeline/normalise.js';
import { parseSmartBrandsBundle } from '../../../operator/src/pipeline/sources/smart-brands-bundle.js';
import { typeAndIdOf } from '../../../operator/src/pipeline/sources/fhir-common.js';
import { formerTypeAndId, formerWithoutTrailingSlashes, generated } from './former-patterns.js';

describe('operator pipeline: source text in linear time', () => {
  it('reads a reference’s type and id as the former pattern did, on 20000 generated references', () => {
    const references = generated(3, 20_000, 8, [
      'Endpoint',
      'a',
      'B1',
      '/',
      '/',
      '_history',
      '/_history/',
      'Endpoint/e1',
      '_',
      '1',
      '-',
      'x/',
      'https://h.example',
      '#',
    ]);
    for (const reference of references)
      expect(typeAndIdOf(reference), reference).to.deep.equal(formerTypeAndId(reference));
    expect(references.filter((r) => typeAndIdOf(r) !== undefined).length).to.be.greaterThan(2000);
    expect(
      references.filter((r) => r.endsWith(`/${typeAndIdOf(r)?.id}`) === false && typeAndIdOf(r) !== undefined).length,
      'versioned',
    ).to.be.greaterThan(200);
  });

  it('resolves a reference inside a megabyte of letters, and pairs nothing with it', () => {
    const huge = `${'a'.repeat(1024 * 1024)}/b/`;
    expect(typeAndIdOf(huge)).to.equal(undefined);
    expect(typeAndIdOf(`${'Endpoint'.repeat(100_000)}/e1/_history/2`)).to.deep.equal({
      type: 'Endpoint'.repeat(100_000),
      id: 'e1',
    });
    const bundle = {
      resourceType: 'Bundle',
      entry: [
        {
          resource: {
            resourceType: 'Organization',
            id: 'o',
            name: 'Hostile Health',
            endpoint: [{ reference: huge }, { reference: 'Endpoint/e' }],
          },
        },
        {
          resource: { resourceType: 'Endpoint', id: 'e', status: 'active', address: 'https://fhir.hostile.example/r4' },
        },
      ],
    };
    const parsed = parseSmartBrandsBundle(JSON.stringify(bundle));
    expect(parsed.rows.map((r) => r.fhirBaseUrl)).to.deep.equal(['https://fhir.hostile.example/r4']);
    expect(parsed.rejected).to.equal(1);
  });

  it('drops trailing slashes as the former pattern did, also after 100 000 slashes that something follows', () => {
    for (const path of generated(5, 5000, 6, ['/', '//', 'a', 'r4', '%2F']))
      expect(withoutTrailingSlashes(path), path).to.equal(formerWithoutTrailingSlashes(path));
    expect(normaliseFhirBaseUrl(`https://fhir.example.org/${'/'.repeat(100_000)}r4//`)).to.equal(
      `https://fhir.example.org/${'/'.repeat(100_000)}r4`,
    );
  });
});
