// Search beyond exact words, in the index: the typo-tolerant fallback, find by address or NPI, near a point, and the
// `only` filter. The fixture lists' brand names throughout (test/api/features/catalog/search/real-brands.ts), plus a
// few brands of the test's own pinning down what those lack (NPIs, portals, locations; the HTTP tests use the import
// pipeline).
import { expect } from 'chai';
import type { CatalogBrand } from '#core/catalog/model.js';
import { words } from '#core/catalog/fold.js';
import { BrandSearchIndex, MAX_FUZZY_WORDS } from '../../../../../api/src/features/catalog/search/index.js';
import type { SearchResult } from '../../../../../api/src/features/catalog/search/results.js';
import { allowedEdits } from '../../../../../api/src/features/catalog/search/near-words.js';
import { stateName } from '#core/catalog/states.js';
import { buildBrand, loadRealBrands } from './real-brands.js';
import { osaDistance } from '../../../../../testkit/osa.js';

const MADISON = { lat: 43.0731, lon: -89.4012 };
const MILWAUKEE = { lat: 43.0389, lon: -87.9065 };
const CHICAGO = { lat: 41.8781, lon: -87.6298 };

const synthetic = {
  // The CMS example NPI (valid Luhn with the 80840 prefix).
  withNpi: buildBrand({
    name: 'Quillfeather Clinic',
    npis: ['1234567893'],
    fhirBaseUrl: 'https://fhir.quillfeather.example.org/r4',
  }),
  portal: buildBrand({
    name: 'Harborlight Health',
    fhirBaseUrl: 'https://api.harborlight.example.net/fhir/R4',
    portalUrl: 'https://mychart.harborlight.example.org/MyChart/',
  }),
  sameHost1: buildBrand({ name: 'Alderbrook Medical', fhirBaseUrl: 'https://fhir.sharedhost.example.com/alderbrook' }),
  sameHost2: buildBrand({ name: 'Birchwood Medical', fhirBaseUrl: 'https://fhir.sharedhost.example.com/birchwood' }),
  subdomain: buildBrand({ name: 'Cedar Vale Medical', fhirBaseUrl: 'https://east.fhir.sharedhost.example.com/cedar' }),
  // "example-x" sorts between "example" and "example.*" reversed: must not hide the subdomains.
  lookalikeHost: buildBrand({ name: 'Dogwood Medical', fhirBaseUrl: 'https://sharedhost.example-x.com/dogwood' }),
  madison: buildBrand({
    name: 'Zinnia Care Madison',
    city: 'Madison',
    state: 'WI',
    location: { ...MADISON, from: 'zip' },
  }),
  milwaukee: buildBrand({
    name: 'Zinnia Care Milwaukee',
    city: 'Milwaukee',
    state: 'WI',
    location: { ...MILWAUKEE, from: 'city' },
  }),
  chicago: buildBrand({
    name: 'Zinnia Care Chicago',
    city: 'Chicago',
    state: 'IL',
    location: { ...CHICAGO, from: 'zip' },
  }),
  nowhere: buildBrand({ name: 'Zinnia Care Online' }),
};

const names = (brands: readonly CatalogBrand[]) => brands.map((b) => b.name);
const fuzzyPart = (r: SearchResult) => r.brands.slice(r.exact);

/** Edits from a query word to an indexed word under the fallback's rules: a typo in the first letter counts twice. */
function edits(term: string, token: string): number {
  if (token.startsWith(term)) return 0;
  const max = allowedEdits(term.length);
  if (max === 0) return Infinity;
  const d = osaDistance(term, token);
  const cost = term[0] === token[0] ? d : d + 1;
  return d > 0 && cost <= max ? cost : Infinity;
}

/** The fallback's rules written the plain way, over every brand: what it must return after the exact results. */
function fuzzyOracle(brands: CatalogBrand[], q: string, exact: readonly CatalogBrand[], limit: number): CatalogBrand[] {
  const terms = [...new Set(words(q))];
  if (terms.length > MAX_FUZZY_WORDS) return [];
  const taken = new Set(exact);
  const ranked: { brand: CatalogBrand; rank: number; folded: string }[] = [];
  for (const brand of brands) {
    if (taken.has(brand)) continue;
    const fields = [
      words(brand.name),
      brand.aliases.flatMap(words),
      [...words(brand.city ?? ''), ...words(brand.state ?? ''), ...words(stateName(brand.state ?? '') ?? '')],
    ];
    let total = 0;
    let allName = true;
    let allNameOrAlias = true;
    let ok = true;
    for (const term of terms) {
      const best = fields.map((list) => Math.min(...list.map((w) => edits(term, w))));
      const min = Math.min(...best);
      if (min === Infinity) {
        ok = false;
        break;
      }
      total += min;
      if (best[0] !== min) {
        allName = false;
        if (best[1] !== min) allNameOrAlias = false;
      }
    }
    if (!ok || total === 0) continue;
    const tier = allName ? 1 : allNameOrAlias ? 2 : 3;
    ranked.push({ brand, rank: Math.min(total, 15) * 4 + tier, folded: words(brand.name).join(' ') });
  }
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  ranked.sort((a, b) => a.rank - b.rank || cmp(a.folded, b.folded) || cmp(a.brand.id, b.brand.id));
  return ranked.slice(0, Math.max(0, limit - exact.length)).map((r) => r.brand);
}

describe('catalog: search beyond exact words', () => {
  let brands: CatalogBrand[];
  let index: BrandSearchIndex;

  before(() => {
    brands = [...loadRealBrands(), ...Object.values(synthetic)];
    index = BrandSearchIndex.build(brands);
  });

  describe('typo-tolerant fallback', () => {
    it('finds a listed brand through a typo, marked as such, after every exact result', () => {
      const expected: Record<string, string> = {
        'talby generl hospital': 'Talby General Hospital',
        'tably general': 'Talby General Hospital',
        'talby genreal hospitl': 'Talby General Hospital',
        // Through its state, Massachusetts.
        'massachusets general': 'Mass General Alderway',
      };
      for (const [q, name] of Object.entries(expected)) {
        const result = index.search(q, { limit: 25 });
        expect(result.exact, q).to.equal(0);
        expect(names(result.brands)[0], q).to.equal(name);
      }
    });

    it('never changes the exact results, only fills after them', () => {
      for (const q of ['providence', 'mass gen', 'larkmoor', 'talby general']) {
        const full = index.search(q, { limit: 100 });
        const exactOnly = index.search(q, { limit: full.exact });
        expect(full.exact, q).to.be.greaterThan(0);
        expect(full.brands.slice(0, full.exact), q).to.deep.equal(exactOnly.brands);
        for (const brand of fuzzyPart(full)) expect(exactOnly.brands, q).to.not.include(brand);
      }
    });

    it('does not run when the exact match fills the limit', () => {
      const result = index.search('health', { limit: 25 });
      expect(result.exact).to.equal(25);
      expect(result.brands).to.have.length(25);
    });

    it('gives words under four letters no edits', () => {
      // "tlby" (4) may be one edit from "talby"; "tby" (3) must be a prefix.
      expect(names(index.search('tby general', { limit: 25 }).brands)).to.not.include('Talby General Hospital');
      expect(names(index.search('tlby general', { limit: 25 }).brands)).to.include('Talby General Hospital');
    });

    it('counts a typo in the first letter as two edits', () => {
      // "ralby" (5 letters, 1 edit allowed) is one substitution from "talby", in the first letter.
      expect(names(index.search('ralby general', { limit: 25 }).brands)).to.not.include('Talby General Hospital');
      // "jassachusetts" (13 letters, 2 allowed): the first-letter substitution costs both.
      expect(names(index.search('jassachusetts general', { limit: 25 }).brands)).to.include('Mass General Alderway');
    });

    it('agrees with a plain implementation of the rules on typos of listed names', () => {
      const queries = [
        'talby generl',
        'providance',
        'childrens hospitl',
        'univeristy medical',
        'mercy helth',
        'toliver',
        'st marys regionl',
        'sanford helth',
        'memorail hermann',
        'baptsit health',
      ];
      // Deterministic typos of every 97th brand's first long name word: a swap, a deletion, a substitution.
      for (let i = 0; i < brands.length; i += 97) {
        const word = words(brands[i]!.name).find((w) => w.length >= 5);
        if (!word) continue;
        queries.push(
          word.slice(0, 2) + word[3] + word[2] + word.slice(4),
          word.slice(0, 3) + word.slice(4),
          word.slice(0, 3) + 'q' + word.slice(4),
        );
      }
      for (const q of queries) {
        const result = index.search(q, { limit: 25 });
        const exact = result.brands.slice(0, result.exact);
        expect(names(fuzzyPart(result)), q).to.deep.equal(names(fuzzyOracle(brands, q, exact, 25)));
      }
    });

    it('treats a repeated word as one (it may match the same word again)', () => {
      expect(index.search('talby talby generl generl', { limit: 25 })).to.deep.equal(
        index.search('talby generl', { limit: 25 }),
      );
    });

    it(`ignores queries of more than ${MAX_FUZZY_WORDS} distinct words`, () => {
      const long = 'talby generl hospitl a b c d e f';
      expect(words(long).length).to.be.greaterThan(MAX_FUZZY_WORDS);
      expect(index.search(long, { limit: 25 }).brands).to.deep.equal([]);
    });
  });

  describe('find by address or NPI', () => {
    it('finds the brand whose FHIR base URL is the query, however it is written', () => {
      for (const q of [
        'https://fhir.quillfeather.example.org/r4',
        'HTTPS://FHIR.QUILLFEATHER.EXAMPLE.ORG/r4/',
        'fhir.quillfeather.example.org/r4',
        'fhir.quillfeather.example.org',
      ]) {
        const result = index.search(q, { limit: 5 });
        expect(result.brands[0], q).to.equal(synthetic.withNpi);
        expect(result.exact, q).to.be.greaterThan(0);
      }
    });

    it('ranks the same URL, the same FHIR host, the same portal host, then subdomains', () => {
      expect(
        names(index.search('https://fhir.sharedhost.example.com/birchwood', { limit: 10 }).brands).slice(0, 2),
      ).to.deep.equal(['Birchwood Medical', 'Alderbrook Medical']);
      expect(names(index.search('sharedhost.example.com', { limit: 10 }).brands).slice(0, 3)).to.deep.equal([
        'Alderbrook Medical',
        'Birchwood Medical',
        'Cedar Vale Medical',
      ]);
      expect(names(index.search('mychart.harborlight.example.org', { limit: 10 }).brands)[0]).to.equal(
        'Harborlight Health',
      );
      expect(names(index.search('harborlight.example.org', { limit: 10 }).brands)[0]).to.equal('Harborlight Health');
      expect(names(index.search('example-x.com', { limit: 10 }).brands)[0]).to.equal('Dogwood Medical');
    });

    it('finds listed brands by their FHIR base URL and host', () => {
      const real = brands.find((b) => b.fhirBaseUrl.startsWith('https://fhir-myrecord.cerner.com/r4/'))!;
      expect(index.search(real.fhirBaseUrl, { limit: 5 }).brands[0]).to.equal(real);
      const onHost = index.search('fhir-myrecord.cerner.com', { limit: 100 }).brands;
      expect(onHost).to.have.length(100);
      for (const brand of onHost) expect(brand.fhirBaseUrl).to.match(/^https:\/\/fhir-myrecord\.cerner\.com\//);
    });

    it('finds brands by an NPI their rows carried, and nothing by another 10-digit number', () => {
      expect(index.search('1234567893', { limit: 5 }).brands).to.deep.equal([synthetic.withNpi]);
      expect(index.search('1234567890', { limit: 5 }).brands).to.deep.equal([]);
    });

    it('keeps word matching, typos included, for text that only looks like a host', () => {
      expect(names(index.search('talby.general', { limit: 5 }).brands)).to.include('Talby General Hospital');
      expect(names(index.search('talby.generl', { limit: 5 }).brands)).to.include('Talby General Hospital');
    });
  });

  describe('near a point', () => {
    it('orders matches by distance, brands without a location last, with distanceKm', () => {
      const result = index.search('zinnia care', { limit: 10, near: MILWAUKEE });
      expect(names(result.brands)).to.deep.equal([
        'Zinnia Care Milwaukee',
        'Zinnia Care Madison',
        'Zinnia Care Chicago',
        'Zinnia Care Online',
      ]);
      const [here, madison, chicago, none] = result.distanceKm!;
      expect(here).to.equal(0);
      expect(madison).to.be.within(118, 122); // Milwaukee-Madison ≈ 120 km
      expect(chicago).to.be.within(127, 132); // Milwaukee-Chicago ≈ 129 km
      expect(none).to.equal(null);
    });

    it('alone, returns the nearest brands of the whole catalog', () => {
      const result = index.search('', { limit: 2, near: CHICAGO });
      expect(names(result.brands)).to.deep.equal(['Zinnia Care Chicago', 'Zinnia Care Milwaukee']);
      // Only the test's own brands have a location here: the rest follow in rank order, without a distance.
      const all = index.search('', { limit: 100, near: MADISON });
      expect(names(all.brands).slice(0, 3)).to.deep.equal([
        'Zinnia Care Madison',
        'Zinnia Care Milwaukee',
        'Zinnia Care Chicago',
      ]);
      expect(all.distanceKm!.slice(3).every((d) => d === null)).to.equal(true);
      expect(all.brands).to.have.length(100);
    });
  });

  describe('near a point, over a placed catalog of the listed brands', () => {
    // Every listed brand placed deterministically across the contiguous US, so distances rarely tie.
    const placedBrands = () =>
      loadRealBrands().map((brand, i) => ({
        ...brand,
        location: {
          lat: 25 + ((i * 7919) % 2400) / 100,
          lon: -124 + ((i * 104729) % 5700) / 100,
          from: 'zip' as const,
        },
      }));
    const distance = (a: { lat: number; lon: number }, b: { lat: number; lon: number }) => {
      const r = Math.PI / 180;
      const h =
        Math.sin(((b.lat - a.lat) * r) / 2) ** 2 +
        Math.cos(a.lat * r) * Math.cos(b.lat * r) * Math.sin(((b.lon - a.lon) * r) / 2) ** 2;
      return 2 * 6371.0088 * Math.asin(Math.sqrt(h));
    };

    it('orders exact and fuzzy matches by distance, whether it walks from the point (common words) or measures each candidate', () => {
      const placed = placedBrands();
      const near = BrandSearchIndex.build(placed);
      const point = { lat: 39.1, lon: -94.6 };
      const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
      for (const q of ['health', 'medical center', 'tolliver', 'st', 'helth', 'providance']) {
        const plain = near.search(q, { limit: 100_000 });
        const byDistance = (list: CatalogBrand[]) =>
          [...list].sort(
            (a, b) =>
              Math.round(distance(point, a.location!) * 100) - Math.round(distance(point, b.location!) * 100) ||
              cmp(words(a.name).join(' '), words(b.name).join(' ')) ||
              cmp(a.id, b.id),
          );
        const expected = [...byDistance(plain.brands.slice(0, plain.exact)), ...byDistance(fuzzyPart(plain))].slice(
          0,
          25,
        );
        const result = near.search(q, { limit: 25, near: point });
        expect(names(result.brands), q).to.deep.equal(names(expected));
        expect(result.distanceKm, q).to.deep.equal(
          expected.map((b) => Math.round(distance(point, b.location!) * 10) / 10),
        );
      }
    });
  });

  describe('the only filter', () => {
    it('keeps only the brands of the mask, in every phase', () => {
      const mask = index.mask((b) => b.name !== 'Birchwood Medical' && b.name !== 'Zinnia Care Madison');
      expect(names(index.search('sharedhost.example.com', { limit: 10, only: mask }).brands)).to.not.include(
        'Birchwood Medical',
      );
      expect(names(index.search('zinnia', { limit: 10, only: mask }).brands)).to.not.include('Zinnia Care Madison');
      expect(names(index.search('', { limit: 10, only: mask, near: MADISON }).brands)).to.not.include(
        'Zinnia Care Madison',
      );
    });
  });
});
