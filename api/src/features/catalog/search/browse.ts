// Browsing a platform without words (docs/api.md, "Browsing a platform"; BrandSearchIndex.browse): one platform's
// brands in rank order (folded name, then id), a page at a time after the position a previous page's cursor names
// (browse-cursor.ts).
import type { PlatformType } from '#core/catalog/model.js';
import { browseCursor, codeUnits, type BrowsePosition } from './browse-cursor.js';
import { platformNumber, type IndexLayout } from './layout.js';
import type { SearchResult } from './results.js';

/**
 * `limit` of the platform's brands after `after` (from the first without it), and the cursor of the page after them.
 * The position holds across snapshots: a brand that appeared or went since moves the walk no further than its place
 * in the order.
 */
export function browse(
  layout: IndexLayout,
  platform: PlatformType,
  limit: number,
  after?: BrowsePosition,
  only?: Uint8Array,
): SearchResult {
  const { brands, foldedNames, platforms } = layout;
  const size = brands.length;
  const wanted = platformNumber(platform);
  let b = 0;
  if (after) {
    let high = size;
    while (b < high) {
      const middle = (b + high) >>> 1;
      if ((codeUnits(foldedNames[middle]!, after.name) || codeUnits(brands[middle]!.id, after.id)) <= 0) b = middle + 1;
      else high = middle;
    }
  }
  const found: number[] = [];
  for (; b < size && found.length <= limit; b++)
    if (platforms[b] === wanted && (only === undefined || only[b] !== 0)) found.push(b);
  const page = found.slice(0, limit);
  const last = page.at(-1);
  const nextCursor =
    found.length > limit && last !== undefined
      ? browseCursor({ name: foldedNames[last]!, id: brands[last]!.id }, platform)
      : null;
  return { brands: page.map((n) => brands[n]!), exact: page.length, nextCursor };
}
