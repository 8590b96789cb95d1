// Where a merged brand is: its city, state and ZIP code, filled from its rows in rank order, and the point the
// API orders `near=` results by.
import type { BrandLocation } from '#core/catalog/model.js';
import { cityCentroid, round4, zipCentroid, zipState } from '#core/catalog/geo.js';
import { stateCode } from '#core/catalog/states.js';
import { cleanName, nameKey } from './normalise.js';
import type { SourceRow } from './types.js';

export interface Place {
  city: string | null;
  /** Two-letter code. */
  state: string | null;
  /** A known 5-digit ZIP code. */
  postalCode: string | null;
}

/**
 * Fills what the place still lacks from a lower-ranked row. City, state and ZIP code travel together, so no
 * brand says "Boston, WI" or sits in Wisconsin at a Boston ZIP code:
 * - a city only from a row that does not place it in another state;
 * - a ZIP code only from a row whose own state, if it gives one, is the ZIP code's, and while the brand is in
 *   that state or in none yet;
 * - once the brand has a ZIP code, its state is the ZIP code's for these rules, even before a row names it.
 */
export function fillPlace(place: Place, row: SourceRow): void {
  const city = row.city === undefined ? '' : cleanName(row.city);
  const state = row.state === undefined ? null : (stateCode(row.state) ?? null);
  const known = place.state ?? (place.postalCode === null ? null : (zipState(place.postalCode) ?? null));
  if (state === null || known === null || state === known) {
    if (place.state === null && place.city === null) {
      place.state = state;
      place.city = city === '' ? null : city;
    } else if (place.city === null) {
      if (city !== '') place.city = city;
    } else if (place.state === null) {
      if (state !== null && (city === '' || nameKey(city) === nameKey(place.city))) place.state = state;
    }
  }
  if (place.postalCode === null && row.postalCode !== undefined) {
    // A military post office has no state: nothing to disagree with.
    const zipIn = zipState(row.postalCode) ?? null;
    const agrees = (other: string | null) => other === null || zipIn === null || other === zipIn;
    if (agrees(state) && agrees(place.state)) place.postalCode = row.postalCode;
  }
}

/** The ZIP code's centroid, else the city's (city and state), to 4 decimals; undefined when neither is known. */
export function locate(place: Place): BrandLocation | undefined {
  const fromZip = place.postalCode === null ? undefined : zipCentroid(place.postalCode);
  if (fromZip !== undefined) return { lat: round4(fromZip.lat), lon: round4(fromZip.lon), from: 'zip' };
  const fromCity = place.city === null || place.state === null ? undefined : cityCentroid(place.city, place.state);
  if (fromCity !== undefined) return { lat: round4(fromCity.lat), lon: round4(fromCity.lon), from: 'city' };
  return undefined;
}
