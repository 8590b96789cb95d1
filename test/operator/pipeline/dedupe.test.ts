import { expect } from 'chai';
import type { PlatformType } from '../../../api/src/catalog/model.js';
import { mergeSources, type MergedBrand } from '../../../operator/src/pipeline/dedupe.js';
import { brandIdFor } from '../../../operator/src/pipeline/ids.js';
import { parseSource } from '../../../operator/src/pipeline/index.js';
import type { SourceRow } from '../../../operator/src/pipeline/types.js';
import { brandFile, epicBrands2026Csv, lanternFile, lanternFiles, loaded } from './brand-data.js';

const URL_A = 'https://fhir.lakeside.example/api/FHIR/R4';
const rows = (...given: SourceRow[]) => ({ rows: given, rejected: 0, rejections: [] });
const source = (name: string, given: SourceRow[], priority = 100, platformType: PlatformType = 'OTHER') =>
  loaded(name, rows(...given), { priority, platformType });
const only = (brands: MergedBrand[]): MergedBrand => {
  expect(brands).to.have.length(1);
  return brands[0]!;
};

describe('operator pipeline: deduplication and merge', () => {
  describe('priority rules', () => {
    it('names the brand from the highest-priority source, wherever it is listed', () => {
      const { brands } = mergeSources([
        source('directory', [{ name: 'Lakeside Hlth Sys', fhirBaseUrl: URL_A }], 100),
        source('curated', [{ name: 'Lakeside Health', fhirBaseUrl: 'http://FHIR.lakeside.example/api/FHIR/R4/' }], 10),
      ]);
      expect(only(brands)).to.deep.include({ name: 'Lakeside Health', aliases: ['Lakeside Hlth Sys'], fhirBaseUrl: URL_A, id: brandIdFor(URL_A) });
    });

    it('breaks ties by source order, then by row order', () => {
      const { brands } = mergeSources([
        source('first', [{ name: 'First Row', fhirBaseUrl: URL_A }, { name: 'Second Row', fhirBaseUrl: URL_A }], 50),
        source('second', [{ name: 'Other Source', fhirBaseUrl: URL_A }], 50),
      ]);
      expect(only(brands)).to.deep.include({ name: 'First Row', aliases: ['Second Row', 'Other Source'] });
    });

    it('takes the winner’s platform type, else the one the URL gives away, else the source default', () => {
      const { brands } = mergeSources([
        source('s', [
          { name: 'Stated', fhirBaseUrl: 'https://fhir-myrecord.cerner.com/r4/stated', platformType: 'VERADIGM' },
          { name: 'Inferred', fhirBaseUrl: 'https://fhir-myrecord.cerner.com/r4/inferred' },
          { name: 'Defaulted', fhirBaseUrl: 'https://fhir.unknown.example/r4' },
        ], 100, 'NEXTGEN'),
        // A lower-ranked row's platform does not override the winner's chain.
        source('late', [{ name: 'Late', fhirBaseUrl: 'https://fhir.unknown.example/r4', platformType: 'GREENWAY' }], 200),
      ]);
      const platformOf = (name: string) => brands.find((b) => b.name === name)!.platformType;
      expect([platformOf('Stated'), platformOf('Inferred'), platformOf('Defaulted')]).to.deep.equal(['VERADIGM', 'CERNER', 'NEXTGEN']);
    });

    it('fills fields the winner lacks from lower-ranked rows, in rank order', () => {
      const { brands } = mergeSources([
        source('curated', [{ name: 'Lakeside Health', fhirBaseUrl: URL_A }], 10),
        source('vendor', [{ name: 'Lakeside', fhirBaseUrl: URL_A, state: 'Wisconsin', portalUrl: 'https://mychart.lakeside.example', logoUrl: 'https://lakeside.example/logo.svg' }], 20),
        source('directory', [{ name: 'Lakeside', fhirBaseUrl: URL_A, city: 'Madison', state: 'WI', portalUrl: 'https://other.example', logoUrl: 'data:image/png;base64,AAAA' }], 30),
      ]);
      expect(only(brands)).to.deep.include({
        name: 'Lakeside Health', aliases: ['Lakeside'], city: 'Madison', state: 'WI',
        portalUrl: 'https://mychart.lakeside.example', logoUrl: 'https://lakeside.example/logo.svg',
      });
    });

    it('never pairs a city with another row’s state', () => {
      const { brands } = mergeSources([
        source('a', [{ name: 'Lakeside Health', fhirBaseUrl: URL_A, state: 'WI' }], 10),
        source('b', [{ name: 'Lakeside Health', fhirBaseUrl: URL_A, city: 'Boston', state: 'MA' }], 20),
        source('c', [{ name: 'Lakeside Health', fhirBaseUrl: URL_A, city: 'Madison' }], 30),
      ]);
      expect(only(brands)).to.include({ city: 'Madison', state: 'WI' });
    });

    it('ignores a state that is not a US state and artwork or portals that are not usable URLs', () => {
      const { brands } = mergeSources([
        source('a', [{ name: 'Lakeside Health', fhirBaseUrl: URL_A, state: 'QC', logoUrl: 'http://lakeside.example/logo.png', portalUrl: 'javascript:alert(1)' }], 10),
        source('b', [{ name: 'Lakeside Health', fhirBaseUrl: URL_A, logoUrl: 'data:image/svg+xml;utf8,<svg/>', portalUrl: 'https://mychart.lakeside.example' }], 20),
      ]);
      expect(only(brands)).to.deep.include({ state: null, city: null, logoUrl: 'data:image/svg+xml;utf8,<svg/>', portalUrl: 'https://mychart.lakeside.example' });
    });

    it('keeps each other name once (case and whitespace aside), never the brand’s own name, in rank order', () => {
      const { brands, duplicatesMerged } = mergeSources([
        source('a', [{ name: 'Lakeside Health', fhirBaseUrl: URL_A, aliases: ['Lakeside', 'LAKESIDE HEALTH'] }], 10),
        source('b', [
          { name: 'lakeside  health', fhirBaseUrl: URL_A },
          { name: 'Lakeside Children’s', fhirBaseUrl: URL_A, aliases: ['lakeside', 'Lakeside Kids'] },
          { name: ' LAKESIDE CHILDREN’S ', fhirBaseUrl: URL_A },
        ], 20),
      ]);
      expect(only(brands).aliases).to.deep.equal(['Lakeside', 'Lakeside Children’s', 'Lakeside Kids']);
      expect(duplicatesMerged).to.equal(3);
    });

    it('leaves logoUrl absent and fields null when no source has them', () => {
      const brand = only(mergeSources([source('a', [{ name: 'Bare', fhirBaseUrl: URL_A }])]).brands);
      expect(brand).to.deep.equal({ id: brandIdFor(URL_A), name: 'Bare', aliases: [], platformType: 'EPIC', fhirBaseUrl: URL_A, city: null, state: null, portalUrl: null });
    });
  });

  describe('counting and determinism', () => {
    it('reports rows, rejected and kept per source, rejecting hand-built rows the parsers would have', () => {
      const parsedElsewhere = { rows: [{ name: 'Kept', fhirBaseUrl: URL_A }], rejected: 3, rejections: ['x', 'y', 'z'] };
      const { perSource, duplicatesMerged, brands } = mergeSources([
        loaded('parsed', parsedElsewhere),
        source('inline', [
          { name: '  ', fhirBaseUrl: 'https://fhir.b.example/r4' },
          { name: 'Bad URL', fhirBaseUrl: 'mailto:x@example.org' },
          { name: 'Dup', fhirBaseUrl: `${URL_A}/` },
          { name: 'New', fhirBaseUrl: 'https://fhir.c.example/r4' },
        ]),
      ]);
      expect(perSource).to.deep.equal([
        { name: 'parsed', rows: 4, rejected: 3, kept: 1 },
        { name: 'inline', rows: 4, rejected: 2, kept: 2 },
      ]);
      expect(duplicatesMerged).to.equal(1);
      expect(brands).to.have.length(2);
    });

    it('sorts brands by id and gives the same output for the same input', () => {
      const input = () => [loaded('epic', parseSource('fhir-endpoint-bundle', brandFile('epic-legacy-2022/epic_endpoints_r4.json')))];
      const first = mergeSources(input());
      const ids = first.brands.map((b) => b.id);
      expect(ids).to.deep.equal([...ids].sort());
      expect(mergeSources(input())).to.deep.equal(first);
    });

    it('merges nothing into nothing', () => {
      expect(mergeSources([])).to.deep.equal({ brands: [], duplicatesMerged: 0, perSource: [] });
    });
  });

  describe('real catalogs', () => {
    it('all 156 Lantern lists: 67,645 rows → 28,308 brands in well under two seconds', () => {
      const started = performance.now();
      const sources = lanternFiles().map((file) => loaded(file, parseSource('lantern-endpoints', lanternFile(file))));
      const result = mergeSources(sources);
      const elapsed = performance.now() - started;
      expect(sources).to.have.length(156);
      const total = (key: 'rows' | 'rejected' | 'kept') => result.perSource.reduce((sum, s) => sum + s[key], 0);
      expect(total('rows')).to.equal(67_645);
      // 855 rows without a name, 20 named rows whose URL identifies no FHIR system (relative paths, tabs).
      expect(total('rejected')).to.equal(875);
      expect(result.brands).to.have.length(28_308);
      expect(result.duplicatesMerged).to.equal(total('kept') - result.brands.length);
      expect(new Set(result.brands.map((b) => b.id)).size).to.equal(result.brands.length);
      // athenahealth's two lists name the same system: one brand, not two.
      expect(result.brands.filter((b) => b.platformType === 'ATHENAHEALTH').map((b) => b.fhirBaseUrl)).to.include('https://api.platform.athenahealth.com/fhir/r4');
      expect(elapsed).to.be.lessThan(2_000);
    });

    it('Oracle patient + Epic R4 (2022) + Epic brands (2026, as CSV) → 2,272 brands', () => {
      const { csv, rows: csvRows } = epicBrands2026Csv();
      const brandsCsv = parseSource('csv', csv);
      expect(brandsCsv).to.include({ rejected: 0 });
      expect(brandsCsv.rows).to.have.length(csvRows);
      const result = mergeSources([
        loaded('oracle-patient', parseSource('fhir-endpoint-bundle', brandFile('oracle-health/millennium_patient_r4_endpoints.json')), { priority: 10, platformType: 'CERNER' }),
        loaded('epic-r4-2022', parseSource('fhir-endpoint-bundle', brandFile('epic-legacy-2022/epic_endpoints_r4.json')), { priority: 20, platformType: 'EPIC' }),
        loaded('epic-brands-2026', brandsCsv, { priority: 30, platformType: 'OTHER' }),
      ]);
      expect(result.perSource).to.deep.equal([
        { name: 'oracle-patient', rows: 1_359, rejected: 0, kept: 1_359 },
        { name: 'epic-r4-2022', rows: 316, rejected: 0, kept: 316 },
        { name: 'epic-brands-2026', rows: 2_566, rejected: 0, kept: 2_566 },
      ]);
      expect(result.brands).to.have.length(2_272);
      expect(result.duplicatesMerged).to.equal(1_359 + 316 + 2_566 - 2_272);
      const counts = (platform: PlatformType) => result.brands.filter((b) => b.platformType === platform).length;
      expect([counts('EPIC'), counts('CERNER')]).to.deep.equal([910, 1_362]);

      // Bronson: named by the 2022 list (higher priority), located by the 2026 one, every name searchable.
      const bronson = result.brands.find((b) => b.fhirBaseUrl === 'https://hygieia.bronsonhg.org/FHIRProxy/api/FHIR/R4')!;
      expect(bronson).to.include({ name: 'Adult & Pediatric Ear, Nose & Throat – Kalamazoo', state: 'MI', city: null });
      expect(bronson.aliases).to.include.members(['Bronson Healthcare Group', 'Bronson', 'West Michigan Cancer Center']);
      expect(bronson.aliases).to.have.length(13);
    });

    it('Epic brands (2026) alone: 1,243 rows → 762 FHIR systems (SOURCES.md’s 761 also folds one /FHIR vs /fhir path pair)', () => {
      const { csv } = epicBrands2026Csv();
      const epicOnly = { ...parseSource('csv', csv) };
      epicOnly.rows = epicOnly.rows.filter((r) => r.platformType === 'EPIC');
      expect(epicOnly.rows).to.have.length(1_243);
      const { brands } = mergeSources([loaded('epic-brands-2026', epicOnly)]);
      expect(brands).to.have.length(762);
      const northwell = brands.filter((b) => b.fhirBaseUrl.startsWith('https://call.api.northwell.io/epic-proxy/api/'));
      expect(northwell.map((b) => b.fhirBaseUrl).sort()).to.deep.equal([
        'https://call.api.northwell.io/epic-proxy/api/FHIR/R4',
        'https://call.api.northwell.io/epic-proxy/api/fhir/R4',
      ]);
      const providence = brands.find((b) => b.fhirBaseUrl === 'https://haikuwa.providence.org/fhirproxy/api/FHIR/R4')!;
      expect(providence.aliases).to.have.length(41);
    });
  });
});
