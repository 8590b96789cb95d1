// Query strings for the HTTP benchmark's catalog search rows beyond the fixed two-word list, made from the loaded
// catalog's own brand names: typos that really take the typo-tolerant fallback, searches near ZIP codes the bundled
// data knows, and more distinct two-word prefixes than the answer cache can hold, so that cycling through them
// misses it on every request (an entry comes back round only after more newer ones than the cache has room for).
import { zipCentroid } from '#core/catalog/geo.js';
import type { CatalogBrand } from '#core/catalog/model.js';
import type { CatalogIndex } from '../../api/src/features/catalog/active.js';
import { MAX_ENTRIES } from '../../api/src/features/catalog/answer-cache.js';
import { seededRandom, typo } from '../../testkit/synthetic-brands.js';

export interface CatalogBenchQueries {
  /** Typos as people make them in a health system's name: each one's answer has brands marked fuzzy. */
  typos: string[];
  /** Distinct typos of real names, each verified to take the fallback: more than the cache holds. */
  distinctTypos: string[];
  /** near=<ZIP> with and without q, for a few well-known ZIP codes. */
  near: string[];
  /** Distinct near=<ZIP> searches (every known ZIP code, alternately with a name's first word). */
  distinctNear: string[];
  /** Distinct two-word prefixes of real names ("mercy med"): more than the cache holds. */
  distinct: string[];
  /** The most entries the answer cache can hold (answer-cache.ts). */
  cacheEntries: number;
}

const LIMIT = 25;
/** Well past the cache's bound, so that no entry survives until its query comes round again. */
const DISTINCT = 2 * MAX_ENTRIES;
const TYPOS = [
  'mercy medcal',
  'kaiser permanante',
  'univrsity hospital',
  'childrns hospital',
  'baptst health',
  'memorial hermnn',
  'regonal medical',
  'sutter helth',
];
const ZIPS = ['10001', '60601', '94103', '53703', '77030', '02114'];

const search = (params: Record<string, string>) => new URLSearchParams({ ...params, limit: String(LIMIT) }).toString();
const words = (brand: CatalogBrand) =>
  brand.name
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);

/** True when the index answers `q` with at least one brand from the typo-tolerant fallback. */
const takesFallback = (index: CatalogIndex, q: string) => {
  const result = index.search(q, { limit: LIMIT });
  return result.exact < result.brands.length;
};

function shuffled<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

export function catalogBenchQueries(brands: readonly CatalogBrand[], index: CatalogIndex): CatalogBenchQueries {
  const random = seededRandom(23);
  const typos = TYPOS.filter((q) => takesFallback(index, q));
  if (typos.length < TYPOS.length)
    throw new Error(`no fuzzy results for ${TYPOS.filter((q) => !typos.includes(q)).join(', ')}`);

  const prefixes = new Set<string>();
  const typoed = new Set<string>();
  for (const brand of shuffled([...brands], random)) {
    const [first, second] = words(brand);
    if (!first || !second) continue;
    for (let letters = 1; letters <= Math.min(4, second.length); letters++)
      prefixes.add(`${first} ${second.slice(0, letters)}`);
    const long = first.length >= 5 ? 0 : second.length >= 5 ? 1 : -1;
    if (typoed.size < DISTINCT && long >= 0) {
      const pair = [first, second];
      pair[long] = typo(random, pair[long]!, 1);
      const q = pair.join(' ');
      if (!typoed.has(q) && takesFallback(index, q)) typoed.add(q);
    }
  }
  const known: string[] = [];
  for (let n = 501; n <= 99_950; n++) {
    const zip = String(n).padStart(5, '0');
    if (zipCentroid(zip) !== undefined) known.push(zip);
  }
  const firstWords = [...new Set(brands.map((b) => words(b)[0]).filter((w): w is string => (w?.length ?? 0) >= 3))];
  const distinctNear = shuffled(known, random).map((zip, i) =>
    search(i % 2 === 0 ? { near: zip } : { q: firstWords[i % firstWords.length]!, near: zip }),
  );
  return {
    typos: typos.map((q) => search({ q })),
    distinctTypos: [...typoed].map((q) => search({ q })),
    near: ZIPS.flatMap((zip) => [search({ near: zip }), search({ q: 'medical', near: zip })]),
    distinctNear,
    distinct: shuffled([...prefixes], random)
      .slice(0, DISTINCT)
      .map((q) => search({ q })),
    cacheEntries: MAX_ENTRIES,
  };
}
