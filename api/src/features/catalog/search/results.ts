// What a search of the catalog answers (BrandSearchIndex.search and browse): the brands, in order, and what comes
// with them: where the exact matches end, the cursor of a browse's next page, the distances from the point a search
// was near, and the names that other brands share.
import type { CatalogBrand } from '#core/catalog/model.js';
import type { IndexLayout } from './layout.js';
import type { Origin, PlaceIndex } from './places.js';

export interface SearchResult {
  brands: CatalogBrand[];
  /** Browsing (browse()): where the next page starts, null after the last; absent from searches. */
  nextCursor?: string | null;
  /** brands[i] for i < exact matched exactly (address, NPI or word prefixes); the rest were found by the typo-tolerant
   * fallback. */
  exact: number;
  /** With `near`: each result's distance from the point in km (0.1 km steps); null for a brand without a location. */
  distanceKm?: (number | null)[];
  /**
   * Each result's folded name when another brand of the catalog has the same one, else null (no other result can
   * share it): what disambiguation.ts groups namesakes by, without working the names out again.
   */
  nameKeys?: (string | null)[];
}

/**
 * A search's result: the brands numbered `numbers`, the first `exact` of them exact matches. `namesake`: 1 for a
 * brand whose folded name another brand has too.
 */
export function searchResult(
  layout: IndexLayout,
  namesake: Uint8Array,
  places: PlaceIndex,
  numbers: readonly number[],
  exact: number,
  origin: Origin | undefined,
): SearchResult {
  const brands = numbers.map((b) => layout.brands[b]!);
  const nameKeys = numbers.map((b) => (namesake[b] === 1 ? layout.foldedNames[b]! : null));
  if (origin === undefined) return { brands, exact, nameKeys };
  const distanceKm = numbers.map((b) => {
    const km = places.distanceKm(b, origin);
    return Number.isNaN(km) ? null : Math.round(km * 10) / 10;
  });
  return { brands, exact, nameKeys, distanceKm };
}
