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
// The cells are themselves grouped in regions of REGION_CELLS × REGION_CELLS cells, each with the box around its
// cells' boxes, and the heap starts with the regions alone: a region's cells are measured only when the walk
// reaches it, so a query measures some hundred boxes rather than all 1,400 of a national catalog.
import { EARTH_RADIUS_KM, type GeoPoint } from '#core/catalog/geo.js';
import type { CatalogBrand } from '#core/catalog/model.js';
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
/** A region's side in cells (4 degrees): the brand list fixtures' 1,418 cells fall in 82 regions. */
const REGION_CELLS = 8;

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
  /** Scratch of nearest (not reentrant): the heap of regions and cells, and the floor step of each. */
  private readonly heap: Uint32Array;
  private readonly floor: Float64Array;

  private constructor(
    /** Per brand number: latitude and longitude in radians, and the cosine of the latitude; NaN without a location. */
    private readonly lat: Float64Array,
    private readonly lon: Float64Array,
    private readonly cosLat: Float64Array,
    /** cells + 1 offsets into cellBrands: the brands of cell c are cellBrands[cellStart[c], cellStart[c + 1]). */
    private readonly cellStart: Uint32Array,
    private readonly cellBrands: Uint32Array,
    /**
     * Per box, 6 numbers: the 3-D box (km) around its brands, min x, y, z then max x, y, z. Boxes 0 to cells - 1 are
     * the cells', then one per region.
     */
    private readonly boxes: Float64Array,
    /** regions + 1 offsets into the cells: region r holds cells regionStart[r] to regionStart[r + 1] - 1. */
    private readonly regionStart: Uint32Array,
    /** Brand numbers without a location, ascending (rank order). */
    private readonly unplaced: Uint32Array,
  ) {
    const entries = cellStart.length - 1 + regionStart.length - 1;
    this.heap = new Uint32Array(entries);
    this.floor = new Float64Array(entries);
  }

  /** `brands` in the index's rank order. */
  static build(brands: readonly CatalogBrand[]): PlaceIndex {
    const size = brands.length;
    const lat = new Float64Array(size).fill(NaN);
    const lon = new Float64Array(size).fill(NaN);
    const cosLat = new Float64Array(size).fill(NaN);
    // By region, then cell: grid row and column of each, the region's from the cell's.
    const byCell = new Map<number, number[]>();
    const unplaced: number[] = [];
    const cellKey = (row: number, column: number) => {
      const region = Math.floor(row / REGION_CELLS) * 1000 + Math.floor(column / REGION_CELLS);
      return (region * 1000 + row) * 1000 + column;
    };
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
      const cell = cellKey(Math.floor((at.lat + 90) / CELL_DEGREES), Math.floor((at.lon + 180) / CELL_DEGREES));
      const members = byCell.get(cell);
      if (members) members.push(b);
      else byCell.set(cell, [b]);
    });
    const keys = [...byCell.keys()].sort((a, b) => a - b);
    const regionOf = (key: number) => Math.floor(key / 1e6);
    const regionStart: number[] = [];
    keys.forEach((key, c) => {
      if (c === 0 || regionOf(key) !== regionOf(keys[c - 1]!)) regionStart.push(c);
    });
    regionStart.push(keys.length);
    const cells = keys.length;
    const regions = regionStart.length - 1;
    const cellStart = new Uint32Array(cells + 1);
    const cellBrands = new Uint32Array(size - unplaced.length);
    const boxes = new Float64Array((cells + regions) * 6);
    for (let box = 0; box < cells + regions; box++)
      boxes.fill(Infinity, box * 6, box * 6 + 3).fill(-Infinity, box * 6 + 3, box * 6 + 6);
    const widen = (box: number, v: number, axis: number) => {
      boxes[box * 6 + axis] = Math.min(boxes[box * 6 + axis]!, v);
      boxes[box * 6 + 3 + axis] = Math.max(boxes[box * 6 + 3 + axis]!, v);
    };
    for (let r = 0; r < regions; r++) {
      for (let c = regionStart[r]!; c < regionStart[r + 1]!; c++) {
        const members = byCell.get(keys[c]!)!;
        cellStart[c + 1] = cellStart[c]! + members.length;
        cellBrands.set(members, cellStart[c]); // ascending: brands were numbered in this loop's order
        for (const b of members) {
          cartesian(lat[b]!, lon[b]!).forEach((v, axis) => {
            widen(c, v, axis);
            widen(cells + r, v, axis);
          });
        }
      }
    }
    return new PlaceIndex(
      lat,
      lon,
      cosLat,
      cellStart,
      cellBrands,
      boxes,
      Uint32Array.from(regionStart),
      Uint32Array.from(unplaced),
    );
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

  /** A lower bound of the step of every brand in a box: the great-circle distance the chord to the box allows. */
  private boxStep(box: number, from: Origin): number {
    const boxes = this.boxes;
    const o = box * 6;
    const dx = Math.max(boxes[o]! - from.x, 0, from.x - boxes[o + 3]!);
    const dy = Math.max(boxes[o + 1]! - from.y, 0, from.y - boxes[o + 4]!);
    const dz = Math.max(boxes[o + 2]! - from.z, 0, from.z - boxes[o + 5]!);
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
    // A binary heap of boxes by their floor step (a lower bound of their brands' steps): at first every region's
    // (box numbers from `cells` on), and a region's cells (0 to cells - 1) once it is taken out.
    const { heap, floor, cellStart, cellBrands, regionStart } = this;
    const cells = cellStart.length - 1;
    const regions = regionStart.length - 1;
    let length = 0;
    const less = (a: number, b: number) => floor[heap[a]!]! < floor[heap[b]!]!;
    const swap = (a: number, b: number) => {
      const t = heap[a]!;
      heap[a] = heap[b]!;
      heap[b] = t;
    };
    const down = (i: number) => {
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < length && less(l, m)) m = l;
        if (r < length && less(r, m)) m = r;
        if (m === i) return;
        swap(i, m);
        i = m;
      }
    };
    const push = (box: number) => {
      floor[box] = this.boxStep(box, from);
      let i = length++;
      heap[i] = box;
      while (i > 0 && less(i, (i - 1) >>> 1)) {
        swap(i, (i - 1) >>> 1);
        i = (i - 1) >>> 1;
      }
    };
    for (let r = 0; r < regions; r++) {
      floor[cells + r] = this.boxStep(cells + r, from);
      heap[length++] = cells + r;
    }
    for (let i = (length >>> 1) - 1; i >= 0; i--) down(i);
    while (length > 0) {
      const box = heap[0]!;
      if (floor[box]! * ranks * size >= top.worst) break; // no brand in this box or any later one can be nearer
      heap[0] = heap[--length]!;
      down(0);
      if (box >= cells) {
        for (let c = regionStart[box - cells]!; c < regionStart[box - cells + 1]!; c++) push(c);
        continue;
      }
      for (let i = cellStart[box]!; i < cellStart[box + 1]!; i++) {
        if (++tested > budget) return null;
        const b = cellBrands[i]!;
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

/**
 * The best `limit` keys offered, ascending; insertion into a sorted array of ≤ 100 keys beats a heap. The keys are a
 * plain array of doubles: a query makes two or three of these, and a Float64Array of more than 8 elements has its
 * memory outside the JS heap, which took 0.75 us to allocate against 0.07 us.
 */
export class TopKeys {
  readonly keys: number[];
  filled = 0;

  constructor(readonly limit: number) {
    this.keys = Array.from({ length: limit }, () => 0.5); // packed doubles from the start, not small integers
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
