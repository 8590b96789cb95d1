// Deterministic generated catalogs and query mixes for the search-index benchmark. Names come from a
// word-bigram chain trained on real brand names, so word frequencies, common openings ("St.", "Saint",
// "Family") and name lengths look like the real lists, which is what decides how selective a query is.
import type { CatalogBrand, PlatformType } from '../../core/src/catalog/model.js';
import { STATE_CODES, stateName } from '../../core/src/catalog/states.js';

/** mulberry32: small, fast, and the same sequence on every machine for a given seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(random: () => number, list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
const END = '';

export function syntheticBrands(real: readonly CatalogBrand[], count: number, seed = 20261122): CatalogBrand[] {
  const random = seededRandom(seed);
  // Occurrence lists, not sets: picking uniformly from them samples by real frequency.
  const starts: string[] = [];
  const next = new Map<string, string[]>();
  for (const brand of real) {
    for (const name of [brand.name, ...brand.aliases.slice(0, 50)]) {
      const pieces = name.split(/\s+/).filter(Boolean);
      if (pieces.length === 0) continue;
      starts.push(pieces[0]!);
      pieces.forEach((piece, i) => {
        let successors = next.get(piece);
        if (!successors) next.set(piece, (successors = []));
        successors.push(pieces[i + 1] ?? END);
      });
    }
  }
  const cities = real.map((b) => b.city).filter((c): c is string => !!c);
  const platforms = real.map((b) => b.platformType);
  const name = () => {
    const pieces = [pick(random, starts)];
    while (pieces.length < 8) {
      const following = pick(random, next.get(pieces[pieces.length - 1]!) ?? [END]);
      if (following === END) break;
      pieces.push(following);
    }
    return pieces.join(' ');
  };

  const brands: CatalogBrand[] = [];
  for (let i = 0; i < count; i++) {
    const aliasCount = random() < 0.08 ? 1 + Math.floor(random() * 3) : 0;
    brands.push({
      id: `syn_${i.toString(36)}`,
      name: name(),
      aliases: Array.from({ length: aliasCount }, name),
      platformType: pick(random, platforms),
      fhirBaseUrl: `https://fhir.synthetic.test/${i}`,
      city: cities.length > 0 && random() < 0.6 ? pick(random, cities) : null,
      state: random() < 0.7 ? pick(random, STATE_CODES) : null,
      portalUrl: null,
      logo: null,
    });
  }
  return brands;
}

export interface BenchQuery {
  kind: string;
  q: string;
  platform?: PlatformType;
}

/**
 * What people type into a brand picker: a first word, a first word and the start of the next, a few
 * letters, two and one letters ("st m"), a whole name, a state, a city, and things that match nothing.
 * Typed as written (original case and punctuation), so folding is part of what is measured.
 */
export function queryMix(brands: readonly CatalogBrand[], count: number, seed = 7): BenchQuery[] {
  const random = seededRandom(seed);
  const withCity = brands.filter((b) => b.city);
  const letters = 'bcdfghjklmnpqrstvwxz';
  const kinds: [string, () => string | undefined][] = [
    ['first word', () => pieces(pick(random, brands))[0]],
    ['word + prefix', () => {
      const [a, b] = pieces(pick(random, brands));
      return b ? `${a} ${b.slice(0, 1 + Math.floor(random() * 4))}` : undefined;
    }],
    ['2-3 letters', () => pieces(pick(random, brands))[0]?.slice(0, 2 + Math.floor(random() * 2))],
    ['2 + 1 letters', () => {
      const [a, b] = pieces(pick(random, brands));
      return a && b ? `${a.slice(0, 2)} ${b.slice(0, 1)}` : undefined;
    }],
    ['whole name', () => pick(random, brands).name],
    ['state', () => {
      const code = pick(random, STATE_CODES);
      return random() < 0.5 ? code : stateName(code)!.toLowerCase();
    }],
    ['city', () => (withCity.length > 0 ? pick(random, withCity).city! : undefined)],
    ['miss', () => {
      const junk = Array.from({ length: 5 }, () => pick(random, [...letters])).join('');
      return random() < 0.5 ? junk : `${pieces(pick(random, brands))[0]} ${junk}`;
    }],
  ];
  const queries: BenchQuery[] = [];
  // Kinds in turn; one that cannot make a query from a given brand (no second word) just passes its turn.
  for (let turn = 0; queries.length < count; turn++) {
    const [kind, make] = kinds[turn % kinds.length]!;
    const q = make();
    if (!q || q.trim().length < 2) continue;
    // One query in five narrows to a platform, as an app that supports a single EHR would.
    queries.push(random() < 0.2 ? { kind, q, platform: pick(random, brands).platformType } : { kind, q });
  }
  return queries;
}

const pieces = (brand: CatalogBrand) => brand.name.split(/\s+/).filter(Boolean);
