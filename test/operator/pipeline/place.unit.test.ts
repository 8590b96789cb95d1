// What the merge keeps besides names: NPIs, the ZIP code, and the location derived from it or from the city.
import { expect } from 'chai';
import { contentHashOf } from '#core/catalog/snapshots.js';
import { cityCentroid, zipCentroid, zipState } from '#core/catalog/geo.js';
import type { PlatformType } from '#core/catalog/model.js';
import { MAX_NPIS, mergeSources, type MergedBrand } from '../../../operator/src/pipeline/dedupe.js';
import { parseSource } from '../../../operator/src/pipeline/index.js';
import type { SourceRow } from '../../../operator/src/pipeline/types.js';
import { brandFile, lanternFile, lanternFiles, loaded } from '../../../testkit/brand-data.js';

const URL_A = 'https://fhir.lakeside.example/api/FHIR/R4';
const source = (name: string, rows: SourceRow[], priority = 100) =>
  loaded(name, { rows, rejected: 0, rejections: [] }, { priority });
const merged = (...sources: ReturnType<typeof source>[]): MergedBrand => {
  const { brands } = mergeSources(sources);
  expect(brands).to.have.length(1);
  return brands[0]!;
};
const row = (fields: Partial<SourceRow> = {}): SourceRow => ({
  name: 'Lakeside Health',
  fhirBaseUrl: URL_A,
  ...fields,
});

describe('operator pipeline: identifiers and place in the merge', () => {
  describe('NPIs', () => {
    it('keeps every distinct NPI of every row and source, sorted', () => {
      const brand = merged(
        source(
          'a',
          [row({ npis: ['1992856819'] }), row({ name: 'Lakeside East', npis: ['1234567893', '1992856819'] })],
          10,
        ),
        source('b', [row({ npis: ['1083790893'] }), row({ name: 'Elsewhere', fhirBaseUrl: URL_A })], 20),
      );
      expect(brand.npis).to.deep.equal(['1083790893', '1234567893', '1992856819']);
    });

    it(`keeps the first ${MAX_NPIS} in merge order (best sources first), sorted, and counts the brands capped`, () => {
      // Valid NPIs by construction: 9 digits, then the Luhn check digit over 80840 + them.
      const npi = (n: number) => {
        const base = String(100_000_000 + n);
        const digits = `80840${base}`;
        let sum = 0;
        for (let i = 0; i < digits.length; i++) {
          let d = Number(digits[digits.length - 1 - i]);
          if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
          sum += d;
        }
        return `${base}${(10 - (sum % 10)) % 10}`;
      };
      const late = Array.from({ length: 10 }, (_, i) => npi(i)); // numerically first, but from the worse source
      const early = Array.from({ length: MAX_NPIS }, (_, i) => npi(1_000 + i));
      const { brands, npisCapped } = mergeSources([
        source('late', [row({ npis: late })], 50),
        source('early', [row({ npis: early })], 10),
      ]);
      expect(brands[0]!.npis).to.deep.equal([...early].sort());
      expect(npisCapped).to.equal(1);
      expect(mergeSources([source('early', [row({ npis: early })])]).npisCapped).to.equal(0);
    });
  });

  describe('ZIP code and location', () => {
    it('takes the ZIP code of the best-ranked row that has one, and places the brand at its centroid', () => {
      const brand = merged(
        source('a', [row({ city: 'Madison', state: 'WI' })], 10),
        source('b', [row({ postalCode: '53703' })], 20),
        source('c', [row({ postalCode: '53726', state: 'WI' })], 30),
      );
      expect(brand).to.deep.include({
        city: 'Madison',
        state: 'WI',
        postalCode: '53703',
        location: { ...zipCentroid('53703')!, from: 'zip' },
      });
    });

    it('never takes a ZIP code in another state than the brand’s, nor one a row contradicts with its own state', () => {
      const brand = merged(
        source('a', [row({ city: 'Madison', state: 'WI' })], 10),
        source('b', [row({ postalCode: '02134' })], 20), // Allston, MA
        source('c', [row({ postalCode: '53726', state: 'MN' })], 30), // a Madison ZIP code, but the row says Minnesota
        source('d', [row({ postalCode: '53711', state: 'Wisconsin' })], 40),
      );
      expect(brand).to.deep.include({
        state: 'WI',
        postalCode: '53711',
        location: { ...zipCentroid('53711')!, from: 'zip' },
      });
    });

    it('once it has a ZIP code, takes only that ZIP code’s state, and a city only from rows that agree', () => {
      const brand = merged(
        source('lantern', [row({ postalCode: '53703' })], 10),
        source('b', [row({ city: 'Boston', state: 'MA' })], 20),
        source('c', [row({ city: 'Madison', state: 'WI' })], 30),
      );
      expect(brand).to.deep.include({ city: 'Madison', state: 'WI', postalCode: '53703' });
    });

    it('falls back to the city’s centroid (city and state), else has no location', () => {
      const byCity = merged(source('a', [row({ city: 'St. Louis', state: 'Missouri' })]));
      expect(byCity).to.deep.include({
        city: 'St. Louis',
        state: 'MO',
        location: { ...cityCentroid('Saint Louis', 'MO')!, from: 'city' },
      });
      expect(byCity).to.not.have.property('postalCode');
      // A city without a state, a state without a city, a city the data does not know: no point.
      for (const fields of [
        { city: 'Madison' },
        { state: 'WI' },
        { city: 'Nowhere Special', state: 'WI' },
        { city: 'San Juan', state: 'PR' },
      ]) {
        expect(merged(source('a', [row(fields)])), JSON.stringify(fields)).to.not.have.property('location');
      }
    });

    it('rounds coordinates to 4 decimals', () => {
      const { location } = merged(source('a', [row({ city: 'Houston', state: 'TX' })]));
      expect(location!.from).to.equal('city');
      for (const value of [location!.lat, location!.lon]) expect(Math.round(value * 10_000) / 10_000).to.equal(value);
    });
  });

  it('leaves the new fields out of brands that have none, so their snapshot content is what it was', () => {
    const brand = merged(source('a', [row({ portalUrl: 'https://mychart.lakeside.example' })]));
    expect(Object.keys(brand)).to.deep.equal([
      'id',
      'name',
      'aliases',
      'platformType',
      'fhirBaseUrl',
      'city',
      'state',
      'portalUrl',
    ]);
    // The content hash of the brand as the snapshot stores it, written out field by field as the snapshot format of
    // before the search fields.
    const before = {
      id: brand.id,
      name: 'Lakeside Health',
      aliases: [],
      platformType: 'EPIC' as PlatformType,
      fhirBaseUrl: URL_A,
      city: null,
      state: null,
      portalUrl: 'https://mychart.lakeside.example',
      logo: null,
    };
    expect(contentHashOf([{ ...brand, logo: null }])).to.equal(contentHashOf([before]));
  });

  describe('the whole fixture catalog (the four Oracle Health bundles, the two Epic 2022 lists, the 156 Lantern lists)', () => {
    const sources = () =>
      [
        ['oracle-health/millennium_patient_r4_endpoints.json', 'CERNER'],
        ['oracle-health/millennium_provider_r4_endpoints.json', 'CERNER'],
        ['oracle-health/soarian_patient_r4_endpoints.json', 'CERNER'],
        ['oracle-health-legacy-2023/millennium_patient_r4_endpoints.json', 'CERNER'],
        ['epic-legacy-2022/epic_endpoints_r4.json', 'EPIC'],
        ['epic-legacy-2022/epic_endpoints_r2.json', 'EPIC'],
      ]
        .map(([file, platformType], i) =>
          loaded(file!, parseSource('fhir-endpoint-bundle', brandFile(file!)), {
            priority: i,
            platformType: platformType as PlatformType,
          }),
        )
        .concat(
          lanternFiles().map((file, i) =>
            loaded(file, parseSource('lantern-endpoints', lanternFile(file)), { priority: 10 + i }),
          ),
        );

    it('31,191 brands: 210 with NPIs (337 in all), 12,876 with a ZIP code and located by it, 2 by their city, 18,313 unplaced', () => {
      const { brands, npisCapped } = mergeSources(sources());
      const count = (test: (b: MergedBrand) => boolean) => brands.filter(test).length;
      expect(brands).to.have.length(31_191);
      expect(count((b) => b.npis !== undefined)).to.equal(210);
      expect(brands.reduce((n, b) => n + (b.npis?.length ?? 0), 0)).to.equal(337);
      expect(npisCapped).to.equal(0);
      expect(count((b) => b.postalCode !== undefined)).to.equal(12_876);
      expect(count((b) => b.location?.from === 'zip')).to.equal(12_876);
      // The 2023 bundle's two US rows whose ZIP code is none ("6504" for 06504, "…?"), which no other list gives.
      expect(count((b) => b.location?.from === 'city')).to.equal(2);
      expect(count((b) => b.location === undefined)).to.equal(18_313);
      // The brands with a city and a state that stay unplaced are Puerto Rico's, which the GeoNames US file lacks.
      expect(
        new Set(
          brands.filter((b) => b.city !== null && b.state !== null && b.location === undefined).map((b) => b.state),
        ),
      ).to.deep.equal(new Set(['PR']));
      // Every ZIP code is in the brand's state.
      expect(
        brands.filter((b) => b.postalCode !== undefined && b.state !== null && b.state !== zipState(b.postalCode)),
      ).to.deep.equal([]);
    });
  });
});
