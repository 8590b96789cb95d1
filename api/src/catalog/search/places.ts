// Where brands are, for `near=<ZIP>` (issue 12): distances from a point, and the nearest brands of the whole
// catalog when no words are given. Built once per snapshot from each brand's `location` (its ZIP code's
// centroid, else its city's: the operator derives it), in the index's brand numbering.
//
// The nearest brands are found without measuring the whole catalog: brands with a location are kept in
// order of latitude, and the walk goes outwards from the point's latitude in both directions. A degree of
// latitude is the same distance everywhere, so a brand whose latitude alone puts it further away than the
// current k-th nearest cannot be nearer, and neither can any brand beyond it in that direction.
import { EARTH_RADIUS_KM, type GeoPoint } from '../../../../core/src/catalog/geo.js';
import type { CatalogBrand } from '../../../../core/src/catalog/model.js';
const RADIANS = Math.PI / 180;
/** Distances are ranked to the nearest 10 m, which keeps ranking keys exact integers (see index.ts). */
export const DISTANCE_STEPS_PER_KM = 100;
/** The rank of "no location": after every distance on Earth (20,016 km is half its circumference). */
export const UNPLACED_STEP = 2 ** 22;

/** A point prepared once per query: radians and the cosine of its latitude. */
export interface Origin {
  lat: number;
  lon: number;
  cosLat: number;
}

export function originOf(point: GeoPoint): Origin {
  const lat = point.lat * RADIANS;
  return { lat, lon: point.lon * RADIANS, cosLat: Math.cos(lat) };
}

export class PlaceIndex {
  private constructor(
    /** Per brand number: latitude and longitude in radians, and the cosine of the latitude; NaN without a location. */
    private readonly lat: Float64Array,
    private readonly lon: Float64Array,
    private readonly cosLat: Float64Array,
    /** Brand numbers with a location, by ascending latitude. */
    private readonly byLatitude: Uint32Array,
    /** Brand numbers without a location, ascending (rank order). */
    private readonly unplaced: Uint32Array,
  ) {}

  /** `brands` in the index's rank order. */
  static build(brands: readonly CatalogBrand[]): PlaceIndex {
    const size = brands.length;
    const lat = new Float64Array(size).fill(NaN);
    const lon = new Float64Array(size).fill(NaN);
    const cosLat = new Float64Array(size).fill(NaN);
    const placed: number[] = [];
    const unplaced: number[] = [];
    brands.forEach((brand, b) => {
      const at = brand.location;
      if (!at || !Number.isFinite(at.lat) || !Number.isFinite(at.lon) || Math.abs(at.lat) > 90 || Math.abs(at.lon) > 180) {
        unplaced.push(b);
        return;
      }
      lat[b] = at.lat * RADIANS;
      lon[b] = at.lon * RADIANS;
      cosLat[b] = Math.cos(lat[b]!);
      placed.push(b);
    });
    placed.sort((a, b) => lat[a]! - lat[b]! || a - b);
    return new PlaceIndex(lat, lon, cosLat, Uint32Array.from(placed), Uint32Array.from(unplaced));
  }

  /**
   * Great-circle (haversine) distance in km from the origin to brand b; NaN when b has no location. core's
   * distanceKm computes the same from degrees; here both ends are prepared once, which queries repeat per candidate.
   */
  distanceKm(b: number, from: Origin): number {
    const lat = this.lat[b]!;
    if (Number.isNaN(lat)) return NaN;
    const dLat = Math.sin((lat - from.lat) / 2);
    const dLon = Math.sin((this.lon[b]! - from.lon) / 2);
    const h = dLat * dLat + from.cosLat * this.cosLat[b]! * dLon * dLon;
    return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(h)));
  }

  /** The distance of brand b as a ranking step: whole 10 m steps, UNPLACED_STEP without a location. */
  step(b: number, from: Origin): number {
    const km = this.distanceKm(b, from);
    return Number.isNaN(km) ? UNPLACED_STEP : Math.round(km * DISTANCE_STEPS_PER_KM);
  }

  /**
   * The best `limit` keys of the brands `rankOf` accepts (rank ≥ 0; -1 rejects), ordered as the index orders
   * results near a point: key = (step × ranks + rank) × size + b, so by distance, then rank, then rank order.
   * Brands without a location come last, by rank, then rank order. Returns ascending keys; b = key % size.
   * Gives up (null) after testing `budget` brands: where matches are sparse the walk would test most of the
   * catalog, and the caller's candidates are then the cheaper way.
   */
  nearest(from: Origin, limit: number, ranks: number, rankOf: (b: number) => number, budget = Infinity): TopKeys | null {
    let tested = 0;
    const order = this.byLatitude;
    const size = this.lat.length;
    const top = new TopKeys(limit);
    // The first brand at or north of the point's latitude; the walk goes north from there and south from the one before.
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.lat[order[mid]!]! < from.lat) lo = mid + 1;
      else hi = mid;
    }
    let north = lo;
    let south = lo - 1;
    // The smallest key a brand at latitude `lat` can have: its meridian distance alone, rank 0, brand 0.
    const floorKey = (lat: number) => Math.floor(Math.abs(lat - from.lat) * EARTH_RADIUS_KM * DISTANCE_STEPS_PER_KM) * ranks * size;
    while (north < order.length || south >= 0) {
      // Take the side whose next brand is closer in latitude: every brand left is then at least this far.
      const northGap = north < order.length ? this.lat[order[north]!]! - from.lat : Infinity;
      const southGap = south >= 0 ? from.lat - this.lat[order[south]!]! : Infinity;
      const b = northGap <= southGap ? order[north++]! : order[south--]!;
      if (floorKey(this.lat[b]!) >= top.worst) break; // nothing further can be nearer
      if (++tested > budget) return null;
      const rank = rankOf(b);
      if (rank >= 0) top.offer((this.step(b, from) * ranks + rank) * size + b);
    }
    if (top.filled < limit) {
      if (tested + this.unplaced.length > budget) return null;
      for (let i = 0; i < this.unplaced.length; i++) {
        const b = this.unplaced[i]!;
        const rank = rankOf(b);
        if (rank >= 0) top.offer((UNPLACED_STEP * ranks + rank) * size + b);
      }
    }
    return top;
  }
}

/** The best `limit` keys offered, ascending; insertion into a sorted array of ≤ 100 keys beats a heap. */
export class TopKeys {
  readonly keys: Float64Array;
  filled = 0;

  constructor(readonly limit: number) {
    this.keys = new Float64Array(limit);
  }

  /** The key a new one must be below to enter; Infinity while not full. */
  get worst(): number {
    return this.filled === this.limit ? this.keys[this.limit - 1]! : Infinity;
  }

  offer(key: number): void {
    if (key >= this.worst) return;
    let i = this.filled < this.limit ? this.filled++ : this.limit - 1;
    while (i > 0 && this.keys[i - 1]! > key) {
      this.keys[i] = this.keys[i - 1]!;
      i--;
    }
    this.keys[i] = key;
  }
}
