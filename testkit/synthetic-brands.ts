// Deterministic generated catalogs and query mixes for the search-index benchmark. Names come from a
// word-bigram chain trained on real brand names, so word frequencies, common openings ("St.", "Saint",
// "Family") and name lengths look like the real lists, which is what decides how selective a query is.
import type { CatalogBrand, PlatformType } from '#core/catalog/model.js';
import { STATE_CODES, stateName } from '#core/catalog/states.js';

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

const round4 = (value: number) => Math.round(value * 1e4) / 1e4;

/** Nine random digits and the Luhn check digit over the 80840 prefix (what makes an NPI valid). */
function syntheticNpi(random: () => number): string {
  const body = Array.from({ length: 9 }, () => Math.floor(random() * 10)).join('');
  let sum = 24; // the 80840 prefix's contribution, as CMS publishes it
  [...body].reverse().forEach((digit, i) => {
    const d = Number(digit) * (i % 2 === 0 ? 2 : 1);
    sum += d > 9 ? d - 9 : d;
  });
  return body + String((10 - (sum % 10)) % 10);
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
      // Most systems on a host of their own, the rest on a few shared (multi-tenant) hosts, as in the real lists.
      fhirBaseUrl:
        random() < 0.7
          ? `https://fhir.b${i.toString(36)}.synthetic.test/r4`
          : `https://tenant${Math.floor(random() * 50)}.shared.synthetic.test/r4/${i}`,
      city: cities.length > 0 && random() < 0.6 ? pick(random, cities) : null,
      state: random() < 0.7 ? pick(random, STATE_CODES) : null,
      portalUrl: random() < 0.3 ? `https://mychart.b${i.toString(36)}.synthetic.test/` : null,
      logo: null,
      // Most brands placed somewhere in the contiguous US; a few carry an NPI (a made-up, valid one).
      ...(random() < 0.85 && {
        location: { lat: round4(25 + random() * 24), lon: round4(-124 + random() * 57), from: 'zip' as const },
      }),
      ...(random() < 0.3 && { npis: [syntheticNpi(random)] }),
    });
  }
  return brands;
}

export interface BenchQuery {
  kind: string;
  q: string;
  platform?: PlatformType;
  near?: { lat: number; lon: number };
}

/**
 * One typing error at a random position from `from` on: a swap with the next letter, a deletion, an insertion or
 * a replacement (by one of `letters`). Shared by the benchmarks and the near-words test.
 */
export function typo(random: () => number, word: string, from = 0, letters: readonly string[] = ASCII_LETTERS): string {
  const at = from + Math.floor(random() * (word.length - from));
  const letter = letters[Math.floor(random() * letters.length)]!;
  switch (Math.floor(random() * 4)) {
    case 0:
      if (at + 1 < word.length) return word.slice(0, at) + word[at + 1] + word[at] + word.slice(at + 2);
      return word.slice(0, at) + letter; // the last letter has no next one: replaced instead
    case 1:
      return word.slice(0, at) + word.slice(at + 1);
    case 2:
      return word.slice(0, at) + letter + word.slice(at);
    default:
      return word.slice(0, at) + letter + word.slice(at + 1);
  }
}

const ASCII_LETTERS = [...'abcdefghijklmnopqrstuvwxyz'];

export function queryMix(brands: readonly CatalogBrand[], count: number, seed = 7): BenchQuery[] {
  const random = seededRandom(seed);
  const withCity = brands.filter((b) => b.city);
  const letters = 'bcdfghjklmnpqrstvwxz';
  const placed = brands.filter((b) => b.location);
  const pointNear = (brand: CatalogBrand) => ({
    lat: brand.location!.lat + (random() - 0.5) * 0.2,
    lon: brand.location!.lon + (random() - 0.5) * 0.2,
  });
  const kinds: [string, () => string | { q: string; near: { lat: number; lon: number } } | undefined][] = [
    ['first word', () => pieces(pick(random, brands))[0]],
    [
      'word + prefix',
      () => {
        const [a, b] = pieces(pick(random, brands));
        return b ? `${a} ${b.slice(0, 1 + Math.floor(random() * 4))}` : undefined;
      },
    ],
    ['2-3 letters', () => pieces(pick(random, brands))[0]?.slice(0, 2 + Math.floor(random() * 2))],
    [
      '2 + 1 letters',
      () => {
        const [a, b] = pieces(pick(random, brands));
        return a && b ? `${a.slice(0, 2)} ${b.slice(0, 1)}` : undefined;
      },
    ],
    ['whole name', () => pick(random, brands).name],
    [
      'state',
      () => {
        const code = pick(random, STATE_CODES);
        return random() < 0.5 ? code : stateName(code)!.toLowerCase();
      },
    ],
    ['city', () => (withCity.length > 0 ? pick(random, withCity).city! : undefined)],
    // The typo-tolerant fallback: a long word of the name with one or two errors, alone or with the next word.
    [
      'typo',
      () => {
        const word = pieces(pick(random, brands)).find((p) => /^[a-z]{5,}$/i.test(p));
        return word && typo(random, word, 1);
      },
    ],
    [
      'typo + word',
      () => {
        const [a, b] = pieces(pick(random, brands));
        return a && b && a.length >= 5 ? `${typo(random, a, 1)} ${b}` : undefined;
      },
    ],
    [
      '2 typos',
      () => {
        const word = pieces(pick(random, brands)).find((p) => /^[a-z]{9,}$/i.test(p));
        return word && typo(random, typo(random, word, 1), 1);
      },
    ],
    ['host', () => new URL(pick(random, brands).fhirBaseUrl).host],
    ['url', () => pick(random, brands).fhirBaseUrl],
    ['npi', () => pick(random, brands).npis?.[0]],
    // near=<ZIP>: the nearest brands, and a first word ordered by distance.
    ['near, no words', () => (placed.length > 0 ? { q: '', near: pointNear(pick(random, placed)) } : undefined)],
    [
      'word near',
      () =>
        placed.length > 0
          ? { q: pieces(pick(random, brands))[0] ?? '', near: pointNear(pick(random, placed)) }
          : undefined,
    ],
    [
      'typo near',
      () => {
        const word = pieces(pick(random, brands)).find((p) => /^[a-z]{5,}$/i.test(p));
        return word && placed.length > 0
          ? { q: typo(random, word, 1), near: pointNear(pick(random, placed)) }
          : undefined;
      },
    ],
    [
      'miss',
      () => {
        const junk = Array.from({ length: 5 }, () => pick(random, [...letters])).join('');
        return random() < 0.5 ? junk : `${pieces(pick(random, brands))[0]} ${junk}`;
      },
    ],
  ];
  const queries: BenchQuery[] = [];
  // Kinds in turn; one that cannot make a query from a given brand (no second word) just passes its turn.
  for (let turn = 0; queries.length < count; turn++) {
    const [kind, make] = kinds[turn % kinds.length]!;
    const made = make();
    if (made === undefined) continue;
    const query: BenchQuery = typeof made === 'string' ? { kind, q: made } : { kind, ...made };
    if (query.q.trim().length < 2 && !query.near) continue;
    // One query in five narrows to a platform, as an app that supports a single EHR would.
    queries.push(random() < 0.2 ? { ...query, platform: pick(random, brands).platformType } : query);
  }
  return queries;
}

const pieces = (brand: CatalogBrand) => brand.name.split(/\s+/).filter(Boolean);
