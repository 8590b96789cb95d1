// The cursor of a browse (browse.ts, docs/api.md "Browsing a platform"): where a page ended in the
// rank order (folded name, then id) and which platform's list it belongs to, base64url JSON. Not signed: the catalog
// is public, and a made-up position only starts a walk elsewhere.
import type { PlatformType } from '#core/catalog/model.js';

/** Where a browse page ended: the last brand's folded name and id (what its `nextCursor` carries). */
export interface BrowsePosition {
  name: string;
  id: string;
}

/** The cursor of the browse page of `platform` that ended at `position`. */
export function browseCursor(position: BrowsePosition, platform: PlatformType): string {
  return Buffer.from(JSON.stringify([position.name, position.id, platform])).toString('base64url');
}

/** The position in a browse cursor of `platform`'s list; undefined for anything else (another platform's too). */
export function cursorPosition(cursor: string, platform: PlatformType): BrowsePosition | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 3 &&
      value.every((v) => typeof v === 'string') &&
      value[2] === platform
    )
      return { name: value[0] as string, id: value[1] as string };
  } catch {
    // not JSON
  }
  return undefined;
}

/** Code-unit order (the layout's): negative, zero or positive. */
export function codeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
