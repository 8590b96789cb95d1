import { expect } from 'chai';
import { originOf, PlaceIndex } from '../../../../../api/src/features/catalog/search/places.js';
import type { GeoPoint } from '#core/catalog/geo.js';
import { seededRandom } from '../../../../../testkit/synthetic-brands.js';
import { buildBrand } from './real-brands.js';

// The walk outwards from a point (regions of cells, then cells) against measuring every brand: the same keys, in
// the same order, wherever the point and the brands are (the poles, both sides of the antimeridian, grid lines).
describe('sdk: catalog search, the nearest brands', () => {
  const RANKS = 64;
  const random = seededRandom(41);
  const around = (lat: number, lon: number, spread: number): GeoPoint => ({
    lat: Math.max(-90, Math.min(90, lat + (random() - 0.5) * spread)),
    lon: ((lon + (random() - 0.5) * spread + 540) % 360) - 180,
  });
  const locations: (GeoPoint | undefined)[] = [];
  for (let i = 0; i < 600; i++) locations.push(around(40, -100, 50)); // a continent
  for (let i = 0; i < 150; i++) locations.push(around(0, 180, 6)); // astride the antimeridian
  for (let i = 0; i < 80; i++) locations.push(around(89.5, 0, 1)); // at the north pole
  for (let i = 0; i < 80; i++) locations.push(around(-89.5, 0, 1)); // at the south pole
  for (let i = 0; i < 100; i++) locations.push({ lat: 10 + Math.floor(i / 10) * 0.5, lon: 20 + (i % 10) * 0.5 }); // grid lines
  for (let i = 0; i < 60; i++) locations.push(undefined);
  const brands = locations.map((at, i) =>
    buildBrand({ name: `Brand ${i}`, ...(at && { location: { ...at, from: 'zip' as const } }) }),
  );
  const places = PlaceIndex.build(brands);
  const size = brands.length;
  // A rank per brand, and some brands refused, as a phase's rankOf does.
  const rankOf = (b: number) => (b % 7 === 3 ? -1 : (b * 13) % RANKS);

  function everyBrand(from: GeoPoint, limit: number): number[] {
    const origin = originOf(from);
    const keys: number[] = [];
    for (let b = 0; b < size; b++) {
      const rank = rankOf(b);
      if (rank < 0) continue;
      keys.push((places.step(b, origin) * RANKS + rank) * size + b); // UNPLACED_STEP without a location
    }
    return keys.sort((a, b) => a - b).slice(0, limit);
  }

  const points: GeoPoint[] = [
    { lat: 40, lon: -100 },
    { lat: 0, lon: 179.9 },
    { lat: 0, lon: -179.9 },
    { lat: 90, lon: 0 },
    { lat: -90, lon: 45 },
    { lat: 12.25, lon: 22.25 },
    { lat: 0, lon: 0 },
  ];
  for (const point of points)
    for (const limit of [1, 7, 25, 100]) {
      it(`finds what measuring every brand finds near ${point.lat},${point.lon} (limit ${limit})`, () => {
        const top = places.nearest(originOf(point), limit, RANKS, rankOf)!;
        expect(top.keys.slice(0, top.filled)).to.deep.equal(everyBrand(point, limit));
      });
    }

  it('gives up (null) past its budget, and not before', () => {
    const origin = originOf({ lat: 40, lon: -100 });
    expect(places.nearest(origin, 25, RANKS, rankOf, 5)).to.equal(null);
    expect(places.nearest(origin, 25, RANKS, rankOf, size)).to.not.equal(null);
  });

  it('answers with no placed brand at all', () => {
    const unplaced = PlaceIndex.build([buildBrand({ name: 'Nowhere' }), buildBrand({ name: 'Elsewhere' })]);
    const top = unplaced.nearest(originOf({ lat: 1, lon: 2 }), 5, RANKS, () => 0)!;
    expect(top.filled).to.equal(2);
  });
});
