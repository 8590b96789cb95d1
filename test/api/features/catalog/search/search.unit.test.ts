import { expect } from 'chai';
import type { CatalogBrand, PlatformType } from '#core/catalog/model.js';
import { fold, words } from '#core/catalog/fold.js';
import { BrandSearchIndex } from '../../../../../api/src/features/catalog/search/index.js';
import type { SearchResult } from '../../../../../api/src/features/catalog/search/results.js';
import { stateName } from '#core/catalog/states.js';
import { buildBrand, loadRealBrands } from './real-brands.js';

// Brands of the test's own next to the fixture lists' (test/api/features/catalog/search/real-brands.ts), for what the
// lists lack (accents) or to pin a rule down.
const synthetic = {
  clinica: buildBrand({ name: 'Clínica São José', city: 'San Juan', state: 'PR' }),
  stMarys: buildBrand({
    name: "St. Mary's Regional Hospital",
    city: 'Lewiston',
    state: 'ME',
    platformType: 'MEDITECH',
  }),
  massGeneral: buildBrand({
    name: 'Massachusetts General Hospital',
    city: 'Boston',
    state: 'MA',
    platformType: 'EPIC',
  }),
  // Same folded name; the input lists A first, the id puts B first.
  twinA: buildBrand({ name: 'Zephyr Twin Clinic', id: 'b_twin_2' }),
  twinB: buildBrand({ name: 'ZEPHYR TWIN CLINIC!', id: 'b_twin_1' }),
};

const names = (brands: CatalogBrand[]) => brands.map((b) => b.name);
/** The exact matches of a result (docs/api.md, "The catalog search"), without what the typo-tolerant fallback added. */
const exactOf = (result: SearchResult) => result.brands.slice(0, result.exact);

/**
 * The rules of docs/api.md, "The catalog search" written the plain way, over every brand: the index must return
 * exactly what this returns, in the same order.
 */
function oracle(brands: CatalogBrand[], q: string, platform: PlatformType | undefined, limit: number): CatalogBrand[] {
  const trimmed = q.trim();
  if ([...trimmed].length < 2) return [];
  const terms = words(trimmed);
  if (terms.length === 0) return [];
  const phrase = terms.join(' ');
  const has = (list: string[], term: string) => list.some((w) => w.startsWith(term));
  const ranked: { brand: CatalogBrand; tier: number; folded: string }[] = [];
  for (const brand of brands) {
    if (platform && brand.platformType !== platform) continue;
    const name = words(brand.name);
    const alias = brand.aliases.flatMap(words);
    const place = [
      ...words(brand.city ?? ''),
      ...words(brand.state ?? ''),
      ...words(stateName(brand.state ?? '') ?? ''),
    ];
    if (!terms.every((t) => has(name, t) || has(alias, t) || has(place, t))) continue;
    const folded = name.join(' ');
    const tier = folded.startsWith(phrase)
      ? 0
      : terms.every((t) => has(name, t))
        ? 1
        : terms.every((t) => has(name, t) || has(alias, t))
          ? 2
          : 3;
    ranked.push({ brand, tier, folded });
  }
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  ranked.sort((a, b) => a.tier - b.tier || cmp(a.folded, b.folded) || cmp(a.brand.id, b.brand.id));
  return ranked.slice(0, limit).map((r) => r.brand);
}

describe('catalog: brand search index', () => {
  let brands: CatalogBrand[];
  let index: BrandSearchIndex;
  const search = (q: string, limit = 100, platform?: PlatformType) =>
    exactOf(index.search(q, platform ? { limit, platform } : { limit }));

  before(() => {
    brands = [...loadRealBrands(), ...Object.values(synthetic)];
    index = BrandSearchIndex.build(brands);
  });

  describe('folding', () => {
    it('ignores case, diacritics and compatibility forms', () => {
      expect(words('Clínica SÃO José')).to.deep.equal(['clinica', 'sao', 'jose']);
      expect(words('Ｆｕｌｌｗｉｄｔｈ İstanbul Œuvre')).to.deep.equal(['fullwidth', 'istanbul', 'œuvre']);
    });

    it('joins words at apostrophes and splits them at other punctuation', () => {
      for (const text of ["St. Mary's", 'St Mary’s', 'ST. MARYʼS', 'st mary`s'])
        expect(words(text)).to.deep.equal(['st', 'marys']);
      expect(words('NWIA Bone, Joint & Sports Surgeons, P.C.')).to.deep.equal([
        'nwia',
        'bone',
        'joint',
        'sports',
        'surgeons',
        'p',
        'c',
      ]);
      expect(words('  --  ')).to.deep.equal([]);
      expect(fold("O'Connor-Smith")).to.equal('oconnor-smith');
    });
  });

  describe('matching', () => {
    it('finds a listed brand by its full name, first', () => {
      expect(names(search('Talby General Hospital'))[0]).to.equal('Talby General Hospital');
    });

    it('matches every word as the start of a word, in order or not', () => {
      expect(names(search('mass gen'))).to.deep.equal(['Mass General Alderway', 'Massachusetts General Hospital']);
      expect(names(search('general talby'))).to.deep.equal(['Talby General Hospital']);
      expect(search('alby general')).to.deep.equal([]); // inside a word is not the start of one
    });

    it('accepts a one-character last word', () => {
      // "Talby G…" is the phrase prefix; "Group" and an alias of a merged Epic brand match the "g" too.
      expect(names(search('talby g'))).to.deep.equal([
        'Talby General Hospital',
        'Family Podiatry Group of Talby, PA',
        'Beacon Community Wellness Network',
      ]);
      expect(names(search('talby general h'))).to.deep.equal(['Talby General Hospital']);
    });

    it('ignores case, diacritics and punctuation on both sides', () => {
      for (const q of ['clinica sao jose', 'CLÍNICA São', 'sao jos', 'José'])
        expect(search(q), q).to.include(synthetic.clinica);
      for (const q of ["st. mary's regional", 'St Marys Reg', 'st mary’s', 'MARYS REGIONAL'])
        expect(search(q), q).to.include(synthetic.stMarys);
    });

    it('matches the state by its code and by its full name', () => {
      const inNewYork = brands.filter((b) => b.state === 'NY');
      expect(inNewYork.length).to.be.greaterThan(50);
      const byCode = search('ny', 100);
      const byName = search('new york', 100);
      for (const brand of inNewYork) {
        expect(byCode, brand.name).to.include(brand);
        expect(byName, brand.name).to.include(brand);
      }
      expect(names(search('corbridge new york'))).to.deep.equal(['CORBRIDGE HOSPITAL']);
      expect(names(search('corbridge schenectady'))).to.deep.equal(['CORBRIDGE HOSPITAL']);
    });

    it('matches the aliases of merged brands', () => {
      const network = brands.find(
        (b) => b.fhirBaseUrl === 'https://mychartwa.wrenhaven.example/fhirproxy/api/FHIR/R4',
      )!;
      expect(network.name).to.equal('Abbot Ridge Hospital and Healthcare');
      expect(search('tolliver')).to.deep.equal([network]);
      expect(search('providence orchard rehab')).to.deep.equal([network]);
      expect(search('seattle premier')).to.deep.equal([network]);
    });

    it('returns nothing for a query under two characters or one that matches nothing', () => {
      for (const q of ['', ' ', 't', '  t  ', '😀']) expect(search(q), JSON.stringify(q)).to.deep.equal([]);
      for (const q of ['--', 'zzqxv', 'talby zzqxv', 'xylophone clinic']) expect(search(q), q).to.deep.equal([]);
    });
  });

  describe('ranking', () => {
    it('orders phrase prefix, name, alias, then location matches', () => {
      expect(names(search('providence'))).to.deep.equal([
        // 0: the name starts with the query
        'Providence Valley Medical Center',
        // 1: every word in the name
        'Holy Cross Providence Hospital',
        'St. Anne Providence Health Network',
        // 2: an alias needed ("Providence Sound Home Care", "Providence Harbor Community Clinic")
        'Abbot Ridge Hospital and Healthcare',
        'Beacon Community Wellness Network',
        // 3: the city only (Providence, RI)
        'Narrow River Health System',
      ]);
    });

    it('breaks ties by folded name, then id, whatever the input order', () => {
      expect(search('zephyr twin')).to.deep.equal([synthetic.twinB, synthetic.twinA]);
      const reversed = BrandSearchIndex.build([...brands].reverse());
      for (const q of ['zephyr', 'health', 'st m', 'ny', 'sa'])
        expect(exactOf(reversed.search(q, { limit: 100 })), q).to.deep.equal(search(q));
    });

    it('agrees with a plain implementation of the rules on hundreds of queries over the listed brands', () => {
      const queries = [
        'health',
        'st m',
        'sa',
        'new y',
        'tx',
        'medical center',
        'children',
        'children ho',
        'mary',
        'univ of',
        'a b',
      ];
      // Deterministic: prefixes of the words of every 37th brand's name, alias and city.
      for (let i = 0; i < brands.length; i += 37) {
        const brand = brands[i]!;
        const [first = '', second = ''] = words(brand.name);
        queries.push(
          first.slice(0, 2),
          `${first} ${second.slice(0, 1)}`,
          `${brand.aliases[0] ?? ''} ${brand.city ?? ''}`.slice(0, 12),
        );
      }
      // The first tier is decided on the first two name words' tokens, and past two words on the name itself: whole
      // names of three and more words and their prefixes, a word repeated, a word before the last that is only a
      // prefix, and names of one word.
      for (let i = 5; i < brands.length; i += 53) {
        const own = words(brands[i]!.name);
        const whole = own.join(' ');
        queries.push(whole, whole.slice(0, -1), `${own[0]} ${own[0]}`, `${own[0]!.slice(0, -1)} ${own[1] ?? ''}`);
      }
      queries.push('st st', 'st st st', 'zephyr twin clinic', 'zephyr twin c', 'zephyr tw', 'zephyr zephyr');
      for (const q of queries) {
        for (const platform of [undefined, 'CERNER' as const]) {
          expect(
            names(exactOf(index.search(q, platform ? { limit: 25, platform } : { limit: 25 }))),
            `${q} ${platform}`,
          ).to.deep.equal(names(oracle(brands, q, platform, 25)));
        }
      }
    });
  });

  describe('options and lookups', () => {
    it('restricts to one platform', () => {
      const all = search('health', 100);
      const cerner = search('health', 100, 'CERNER');
      expect(cerner).to.not.be.empty;
      expect(cerner.every((b) => b.platformType === 'CERNER')).to.equal(true);
      expect(search('health', 20, 'CERNER')).to.deep.equal(all.filter((b) => b.platformType === 'CERNER').slice(0, 20));
      expect(search('mass gen', 25, 'MEDITECH')).to.deep.equal([]);
      expect(search('st marys', 25, 'MEDITECH')).to.deep.equal([synthetic.stMarys]);
    });

    it('returns at most limit brands, the best ones', () => {
      const many = search('health', 100);
      expect(many).to.have.length(100);
      expect(search('health', 1)).to.deep.equal(many.slice(0, 1));
      expect(search('health', 7)).to.deep.equal(many.slice(0, 7));
      const tiny = BrandSearchIndex.build([synthetic.clinica]);
      expect(exactOf(tiny.search('sao', { limit: 1000 }))).to.deep.equal([synthetic.clinica]);
      expect(BrandSearchIndex.build([]).search('sao', { limit: 25 }).brands).to.deep.equal([]);
    });

    it('looks brands up by id and counts them', () => {
      expect(index.size).to.equal(brands.length);
      expect(index.get(synthetic.clinica.id)).to.equal(synthetic.clinica);
      expect(index.get('b_unknown')).to.equal(undefined);
    });

    it('refuses a catalog with a duplicate id', () => {
      expect(() =>
        BrandSearchIndex.build([synthetic.clinica, { ...synthetic.stMarys, id: synthetic.clinica.id }]),
      ).to.throw(/duplicate brand id/);
    });
  });
});
