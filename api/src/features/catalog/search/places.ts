// Where brands are, for `near=<ZIP>`: distances from a point, and the nearest brands of the whole
// catalog when no words are given. Built once per snapshot from each brand's `location` (its ZIP code's
// centroid, else its city's: the operator derives it), in the index's brand numbering.
//
// The nearest brands are found without measuring the whole catalog: brands with a location are grouped in
// cells of CELL_DEGREES of latitude and longitude, and each cell keeps the 3-D box (on a sphere of the Earth's
// radius) around its brands. The straight-line distance from the point to a box is at most the chord to any
// brand in it, and the great-circle distance grows with the chord, so it bounds every brand of the cell from
// below. Cells are visited nearest box first (a heap), and the walk stops once the next box is further than the
// current k-th nearest match: a common word near a point tests a few hundred brands, not a band of the country.
import { EARTH_RADIUS_KM, type GeoPoint } from '../../../../../core/src/catalog/geo.js';
import type { CatalogBrand } from '../../../../../core/src/catalog/model.js';
const RADIANS = Math.PI / 180;
/** Distances are ranked to the nearest 10 m, which keeps ranking keys exact integers (see index.ts). */
export const DISTANCE_STEPS_PER_KM = 100;
/** The rank of "no location": after every distance on Earth (20,016 km is half its circumference). */
export const UNPLACED_STEP = 2 ** 22;

/**
 * Near a point, a phase whose candidates reach more postings than this finds its brands by walking outwards from
 * the point instead (nearest), in index.ts and fuzzy.ts alike.
 */
export const WALK_ABOVE_REACH = 2000;

/** Cell size of the walk's grid, in degrees (about 55 km of latitude). */
const CELL_DEGREES = 0.5;

/** A point prepared once per query: radians, the cosine of its latitude, and its place in 3-D (km). */
export interface Origin {
  lat: number;
  lon: number;
  cosLat: number;
  x: number;
  y: number;
  z: number;
}

export function originOf(point: GeoPoint): Origin {
  const lat = point.lat * RADIANS;
  const lon = point.lon * RADIANS;
  const [x, y, z] = cartesian(lat, lon);
  return { lat, lon, cosLat: Math.cos(lat), x, y, z };
}

function cartesian(lat: number, lon: number): [number, number, number] {
  const r = EARTH_RADIUS_KM * Math.cos(lat);
  return [r * Math.cos(lon), r * Math.sin(lon), EARTH_RADIUS_KM * Math.sin(lat)];
}

export class PlaceIndex {
  private constructor(
    /** Per brand number: latitude and longitude in radians, and the cosine of the latitude; NaN without a location. */
    private readonly lat: Float64Array,
    private readonly lon: Float64Array,
    private readonly cosLat: Float64Array,
    /** cells + 1 offsets into cellBrands: the brands of cell c are cellBrands[cellStart[c], cellStart[c + 1]). */
    private readonly cellStart: Uint32Array,
    private readonly cellBrands: Uint32Array,
    /** Per cell, 6 numbers: the 3-D box (km) around its brands, min x, y, z then max x, y, z. */
    private readonly cellBoxes: Float64Array,
    /** Brand numbers without a location, ascending (rank order). */
    private readonly unplaced: Uint32Array,
  ) {}

  /** `brands` in the index's rank order. */
  static build(brands: readonly CatalogBrand[]): PlaceIndex {
    const size = brands.length;
    const lat = new Float64Array(size).fill(NaN);
    const lon = new Float64Array(size).fill(NaN);
    const cosLat = new Float64Array(size).fill(NaN);
    const byCell = new Map<number, number[]>();
    const unplaced: number[] = [];
    brands.forEach((brand, b) => {
      const at = brand.location;
      if (
        !at ||
        !Number.isFinite(at.lat) ||
        !Number.isFinite(at.lon) ||
        Math.abs(at.lat) > 90 ||
        Math.abs(at.lon) > 180
      ) {
        unplaced.push(b);
        return;
      }
      lat[b] = at.lat * RADIANS;
      lon[b] = at.lon * RADIANS;
      cosLat[b] = Math.cos(lat[b]);
      const cell = Math.floor((at.lat + 90) / CELL_DEGREES) * 1000 + Math.floor((at.lon + 180) / CELL_DEGREES);
      const members = byCell.get(cell);
      if (members) members.push(b);
      else byCell.set(cell, [b]);
    });
    const cells = [...byCell.values()];
    const cellStart = new Uint32Array(cells.length + 1);
    const cellBrands = new Uint32Array(cells.reduce((n, members) => n + members.length, 0));
    const cellBoxes = new Float64Array(cells.length * 6);
    cells.forEach((members, c) => {
      cellStart[c + 1] = cellStart[c]! + members.length;
      cellBrands.set(members, cellStart[c]); // ascending: brands were numbered in this loop's order
      cellBoxes.fill(Infinity, c * 6, c * 6 + 3).fill(-Infinity, c * 6 + 3, c * 6 + 6);
      for (const b of members) {
        cartesian(lat[b]!, lon[b]!).forEach((v, axis) => {
          cellBoxes[c * 6 + axis] = Math.min(cellBoxes[c * 6 + axis]!, v);
          cellBoxes[c * 6 + 3 + axis] = Math.max(cellBoxes[c * 6 + 3 + axis]!, v);
        });
      }
    });
    return new PlaceIndex(lat, lon, cosLat, cellStart, cellBrands, cellBoxes, Uint32Array.from(unplaced));
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

  /** A lower bound of the step of every brand in cell c: the great-circle distance the chord to its box allows. */
  private boxStep(c: number, from: Origin): number {
    const box = this.cellBoxes;
    const o = c * 6;
    const dx = Math.max(box[o]! - from.x, 0, from.x - box[o + 3]!);
    const dy = Math.max(box[o + 1]! - from.y, 0, from.y - box[o + 4]!);
    const dz = Math.max(box[o + 2]! - from.z, 0, from.z - box[o + 5]!);
    const chord = Math.sqrt(dx * dx + dy * dy + dz * dz);
    // A hair under, so rounding in the two computations never puts the bound above a brand's own step.
    const km = 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, chord / (2 * EARTH_RADIUS_KM))) * (1 - 1e-9);
    return Math.floor(km * DISTANCE_STEPS_PER_KM);
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
  nearest(
    from: Origin,
    limit: number,
    ranks: number,
    rankOf: (b: number) => number,
    budget = Infinity,
  ): TopKeys | null {
    let tested = 0;
    const size = this.lat.length;
    const top = new TopKeys(limit);
    // Every cell with the step of its box (a lower bound of its brands' steps), in a binary heap by that step.
    const cells = this.cellStart.length - 1;
    const heap = new Uint32Array(cells);
    const floor = new Float64Array(cells);
    for (let c = 0; c < cells; c++) {
      heap[c] = c;
      floor[c] = this.boxStep(c, from);
    }
    let length = cells;
    const less = (a: number, b: number) => floor[heap[a]!]! < floor[heap[b]!]!;
    const down = (i: number) => {
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < length && less(l, m)) m = l;
        if (r < length && less(r, m)) m = r;
        if (m === i) return;
        const t = heap[i]!;
        heap[i] = heap[m]!;
        heap[m] = t;
        i = m;
      }
    };
    for (let i = (length >>> 1) - 1; i >= 0; i--) down(i);
    while (length > 0) {
      const c = heap[0]!;
      if (floor[c]! * ranks * size >= top.worst) break; // no brand in this cell or any later one can be nearer
      heap[0] = heap[--length]!;
      down(0);
      for (let i = this.cellStart[c]!; i < this.cellStart[c + 1]!; i++) {
        if (++tested > budget) return null;
        const b = this.cellBrands[i]!;
        const rank = rankOf(b);
        if (rank >= 0) top.offer((this.step(b, from) * ranks + rank) * size + b);
      }
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
