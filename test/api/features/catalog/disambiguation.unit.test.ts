import { expect } from 'chai';
import { disambiguations } from '../../../../api/src/features/catalog/disambiguation.js';
import { buildBrand } from './search/real-brands.js';
import { BrandSearchIndex } from '../../../../api/src/features/catalog/search/index.js';

describe('sdk: catalog disambiguation of look-alike names', () => {
  it('labels namesakes by place, else portal host, else FHIR host; others get nothing', () => {
    const madison = buildBrand({
      name: 'ExampleHealth',
      city: 'Madison',
      state: 'WI',
      fhirBaseUrl: 'https://fhir.eh.example.com/madison',
    });
    const portal = buildBrand({
      name: 'EXAMPLEHEALTH',
      portalUrl: 'https://ehpmadison.example.com/MyChart/',
      fhirBaseUrl: 'https://fhir.eh.example.com/other',
    });
    const bare = buildBrand({ name: 'ExampleHealth.', fhirBaseUrl: 'https://api.bare.example.net/r4' });
    const alone = buildBrand({ name: 'Unrelated Clinic', city: 'Madison', state: 'WI' });
    expect(disambiguations([madison, alone, portal, bare])).to.deep.equal([
      'Madison, WI',
      undefined,
      'ehpmadison.example.com',
      'api.bare.example.net',
    ]);
  });

  it('labels the same from the name keys a search hands over as from the names themselves', () => {
    const brands = [
      buildBrand({ name: 'ExampleHealth', city: 'Madison', state: 'WI' }),
      buildBrand({ name: 'EXAMPLEHEALTH', portalUrl: 'https://ehpmadison.example.com/MyChart/' }),
      buildBrand({ name: 'ExampleHealth.', fhirBaseUrl: 'https://api.bare.example.net/r4' }),
      buildBrand({ name: 'ExampleHealth Clinic', city: 'Madison', state: 'WI' }),
      buildBrand({ name: 'Unrelated Clinic', city: 'Madison', state: 'WI' }),
    ];
    const index = BrandSearchIndex.build(brands);
    for (const q of ['examplehealth', 'madison', 'clinic', 'example']) {
      const result = index.search(q, { limit: 10 });
      expect(result.nameKeys, q).to.have.length(result.brands.length);
      expect(disambiguations(result.brands, result.nameKeys), q).to.deep.equal(disambiguations(result.brands));
    }
    const namesakes = index.search('examplehealth', { limit: 10 });
    expect(disambiguations(namesakes.brands, namesakes.nameKeys).filter((l) => l !== undefined)).to.have.length(3);
  });

  it('skips a label the namesakes share, down to the FHIR base URL', () => {
    const a = buildBrand({
      name: 'Mercy Clinic',
      city: 'Springfield',
      state: 'MO',
      portalUrl: 'https://mychart.mercy.net/',
      fhirBaseUrl: 'https://fhir.mercy.net/a',
    });
    const b = buildBrand({
      name: 'Mercy Clinic',
      city: 'Springfield',
      state: 'MO',
      portalUrl: 'https://mychart.mercy.net/',
      fhirBaseUrl: 'https://fhir.mercy.net/b',
    });
    const c = buildBrand({
      name: 'Mercy Clinic',
      city: 'Springfield',
      state: 'IL',
      fhirBaseUrl: 'https://fhir.mercy.net/c',
    });
    expect(disambiguations([a, b, c])).to.deep.equal(['fhir.mercy.net/a', 'fhir.mercy.net/b', 'Springfield, IL']);
  });

  it('never gives two namesakes the same label, even across kinds (a portal host that is another FHIR host)', () => {
    const a = buildBrand({
      name: 'Mercy',
      portalUrl: 'https://mychart.mercy.org/MyChart',
      fhirBaseUrl: 'https://fhir.a.org/r4',
    });
    const b = buildBrand({ name: 'Mercy', fhirBaseUrl: 'https://mychart.mercy.org/FHIR/api/R4' });
    expect(disambiguations([a, b])).to.deep.equal(['fhir.a.org', 'mychart.mercy.org/FHIR/api/R4']);
  });

  it('uses whichever of city and state a brand has', () => {
    const a = buildBrand({ name: 'Lakeside', state: 'MN' });
    const b = buildBrand({ name: 'Lakeside', city: 'Duluth' });
    expect(disambiguations([a, b])).to.deep.equal(['MN', 'Duluth']);
  });
});
