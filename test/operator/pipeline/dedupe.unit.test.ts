import { expect } from 'chai';
import type { PlatformType } from '#core/catalog/model.js';
import {
  MAX_ALIASES,
  mergeSources,
  MULTI_TENANT_THRESHOLD,
  type MergedBrand,
} from '../../../operator/src/pipeline/dedupe.js';
import { brandIdFor } from '../../../operator/src/pipeline/ids.js';
import { parseSource } from '../../../operator/src/pipeline/index.js';
import type { SourceRow } from '../../../operator/src/pipeline/types.js';
import { brandFile, epicBrands2026Csv, lanternFile, lanternFiles, loaded } from '../../../testkit/brand-data.js';

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
      expect(only(brands)).to.deep.include({
        name: 'Lakeside Health',
        aliases: ['Lakeside Hlth Sys'],
        fhirBaseUrl: URL_A,
        id: brandIdFor(URL_A),
      });
    });

    it('breaks ties by source order, then by row order', () => {
      const { brands } = mergeSources([
        source(
          'first',
          [
            { name: 'First Row', fhirBaseUrl: URL_A },
            { name: 'Second Row', fhirBaseUrl: URL_A },
          ],
          50,
        ),
        source('second', [{ name: 'Other Source', fhirBaseUrl: URL_A }], 50),
      ]);
      expect(only(brands)).to.deep.include({ name: 'First Row', aliases: ['Second Row', 'Other Source'] });
    });

    it('takes the winner’s platform type, else the one the URL gives away, else the source default', () => {
      const { brands } = mergeSources([
        source(
          's',
          [
            { name: 'Stated', fhirBaseUrl: 'https://fhir-myrecord.cerner.com/r4/stated', platformType: 'VERADIGM' },
            { name: 'Inferred', fhirBaseUrl: 'https://fhir-myrecord.cerner.com/r4/inferred' },
            { name: 'Defaulted', fhirBaseUrl: 'https://fhir.unknown.example/r4' },
          ],
          100,
          'NEXTGEN',
        ),
        // A lower-ranked row's platform does not override the winner's chain.
        source(
          'late',
          [{ name: 'Late', fhirBaseUrl: 'https://fhir.unknown.example/r4', platformType: 'GREENWAY' }],
          200,
        ),
      ]);
      const platformOf = (name: string) => brands.find((b) => b.name === name)!.platformType;
      expect([platformOf('Stated'), platformOf('Inferred'), platformOf('Defaulted')]).to.deep.equal([
        'VERADIGM',
        'CERNER',
        'NEXTGEN',
      ]);
    });

    it('fills fields the winner lacks from lower-ranked rows, in rank order', () => {
      const { brands } = mergeSources([
        source('curated', [{ name: 'Lakeside Health', fhirBaseUrl: URL_A }], 10),
        source(
          'vendor',
          [
            {
              name: 'Lakeside',
              fhirBaseUrl: URL_A,
              state: 'Wisconsin',
              portalUrl: 'https://mychart.lakeside.example',
              logoUrl: 'https://lakeside.example/logo.svg',
            },
          ],
          20,
        ),
        source(
          'directory',
          [
            {
              name: 'Lakeside',
              fhirBaseUrl: URL_A,
              city: 'Madison',
              state: 'WI',
              portalUrl: 'https://other.example',
              logoUrl: 'data:image/png;base64,AAAA',
            },
          ],
          30,
        ),
      ]);
      expect(only(brands)).to.deep.include({
        name: 'Lakeside Health',
        aliases: ['Lakeside'],
        city: 'Madison',
        state: 'WI',
        portalUrl: 'https://mychart.lakeside.example',
        logoUrl: 'https://lakeside.example/logo.svg',
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
        source(
          'a',
          [
            {
              name: 'Lakeside Health',
              fhirBaseUrl: URL_A,
              state: 'QC',
              logoUrl: 'http://lakeside.example/logo.png',
              portalUrl: 'javascript:alert(1)',
            },
          ],
          10,
        ),
        source(
          'b',
          [
            {
              name: 'Lakeside Health',
              fhirBaseUrl: URL_A,
              logoUrl: 'data:image/svg+xml;utf8,<svg/>',
              portalUrl: 'https://mychart.lakeside.example',
            },
          ],
          20,
        ),
      ]);
      expect(only(brands)).to.deep.include({
        state: null,
        city: null,
        logoUrl: 'data:image/svg+xml;utf8,<svg/>',
        portalUrl: 'https://mychart.lakeside.example',
      });
    });

    it('keeps each other name once (case and whitespace aside), never the brand’s own name, in rank order', () => {
      const { brands, duplicatesMerged } = mergeSources([
        source('a', [{ name: 'Lakeside Health', fhirBaseUrl: URL_A, aliases: ['Lakeside', 'LAKESIDE HEALTH'] }], 10),
        source(
          'b',
          [
            { name: 'lakeside  health', fhirBaseUrl: URL_A },
            { name: 'Lakeside Children’s', fhirBaseUrl: URL_A, aliases: ['lakeside', 'Lakeside Kids'] },
            { name: ' LAKESIDE CHILDREN’S ', fhirBaseUrl: URL_A },
          ],
          20,
        ),
      ]);
      expect(only(brands).aliases).to.deep.equal(['Lakeside', 'Lakeside Children’s', 'Lakeside Kids']);
      expect(duplicatesMerged).to.equal(3);
    });

    it('leaves logoUrl absent and fields null when no source has them', () => {
      const brand = only(mergeSources([source('a', [{ name: 'Bare', fhirBaseUrl: URL_A }])]).brands);
      expect(brand).to.deep.equal({
        id: brandIdFor(URL_A),
        name: 'Bare',
        aliases: [],
        platformType: 'EPIC',
        fhirBaseUrl: URL_A,
        city: null,
        state: null,
        portalUrl: null,
      });
    });
  });

  describe('naming after the FHIR host', () => {
    const BRONSON = 'https://hygieia.bronsonhg.example/FHIRProxy/api/FHIR/R4';

    it('prefers, among the best source’s names, the one whose words start a host label or are started by one', () => {
      const { brands } = mergeSources([
        source('epic-2022', [
          { name: 'Adult & Pediatric Ear, Nose & Throat – Kalamazoo', fhirBaseUrl: BRONSON },
          { name: 'Kalamazoo Foot Surgery', fhirBaseUrl: BRONSON },
          { name: 'Bronson Healthcare Group', fhirBaseUrl: BRONSON },
        ]),
      ]);
      // "bronson" starts "bronsonhg"; the other names' aliases keep their row order.
      expect(only(brands)).to.deep.include({
        name: 'Bronson Healthcare Group',
        aliases: ['Adult & Pediatric Ear, Nose & Throat – Kalamazoo', 'Kalamazoo Foot Surgery'],
      });
      // A host label that starts a name word counts too ("lake" starts "Lakeside").
      const lake = 'https://fhir.lake.example/r4';
      expect(
        only(
          mergeSources([
            source('s', [
              { name: 'Harbor Clinic', fhirBaseUrl: lake },
              { name: 'Lakeside', fhirBaseUrl: lake },
            ]),
          ]).brands,
        ).name,
      ).to.equal('Lakeside');
    });

    it('scores by the number of matching words; ties keep the row order', () => {
      const url = 'https://fhir.lakeside-regional.example/r4';
      const named = (...names: string[]) =>
        only(
          mergeSources([
            source(
              's',
              names.map((name) => ({ name, fhirBaseUrl: url })),
            ),
          ]).brands,
        ).name;
      expect(named('Harbor Clinic', 'Lakeside', 'Lakeside Regional Health', 'Regional Lakeside')).to.equal(
        'Lakeside Regional Health',
      );
      expect(named('Harbor Clinic', 'Regional Lakeside', 'Lakeside Regional Health')).to.equal('Regional Lakeside');
      expect(named('Harbor Clinic', 'Bay Clinic')).to.equal('Harbor Clinic');
    });

    it('ignores the top-level domain, short words and words that only say what kind of organisation it is', () => {
      const partners = 'https://epicproxy.healthpartners.example/api/FHIR/R4';
      const named = (url: string, ...names: string[]) =>
        only(
          mergeSources([
            source(
              's',
              names.map((name) => ({ name, fhirBaseUrl: url })),
            ),
          ]).brands,
        ).name;
      // "Health" starts "healthpartners" but says nothing about whose server it is.
      expect(named(partners, 'Park Nicollet Health Services', 'HealthPartners')).to.equal('HealthPartners');
      expect(named('https://fhir.med.example/r4', 'Lakeside', 'Med Center of Example')).to.equal('Lakeside');
      expect(named('https://fhir.harbor.community/r4', 'Lakeside', 'Community Hospital')).to.equal('Lakeside');
    });

    it('never lets a lower-ranked source or a row’s aliases name the brand, however well they match', () => {
      const { brands } = mergeSources([
        source('brands-2026', [{ name: 'Bronson', fhirBaseUrl: BRONSON }], 30),
        source(
          'epic-2022',
          [{ name: 'Kalamazoo Foot Surgery', fhirBaseUrl: BRONSON, aliases: ['Bronson Healthcare Group'] }],
          20,
        ),
      ]);
      expect(only(brands)).to.deep.include({
        name: 'Kalamazoo Foot Surgery',
        aliases: ['Bronson Healthcare Group', 'Bronson'],
      });
    });

    it('takes the matching name as its own row wrote it, even when an earlier alias spelled it otherwise', () => {
      const { brands } = mergeSources([
        source('s', [
          { name: 'Kalamazoo Foot Surgery', fhirBaseUrl: BRONSON, aliases: ['BRONSON'] },
          { name: 'Bronson', fhirBaseUrl: BRONSON },
        ]),
      ]);
      expect(only(brands)).to.deep.include({ name: 'Bronson', aliases: ['Kalamazoo Foot Surgery'] });
    });
  });

  describe('shared vendor endpoints and the alias cap', () => {
    const practices = (count: number, fhirBaseUrl: string, from = 1): SourceRow[] =>
      Array.from({ length: count }, (_, i) => ({ name: `Practice ${from + i}`, fhirBaseUrl }));
    const ATHENA = 'https://api.platform.athenahealth.com/fhir/r4';

    it(`names a system with more than ${MULTI_TENANT_THRESHOLD} distinct names after its vendor and keeps the first ${MAX_ALIASES} names`, () => {
      const { brands, aliasesCapped } = mergeSources([
        source('late', practices(10, ATHENA, 1_000), 50),
        source('early', practices(MULTI_TENANT_THRESHOLD, ATHENA), 10),
      ]);
      const brand = only(brands);
      expect(brand).to.include({ name: 'athenahealth practices', platformType: 'ATHENAHEALTH' });
      // Merge order: the best source's names first, then the next source's.
      expect(brand.aliases).to.deep.equal(practices(MAX_ALIASES, ATHENA).map((r) => r.name));
      expect(aliasesCapped).to.equal(1);
    });

    it(`counts distinct names (aliases included, case aside): ${MULTI_TENANT_THRESHOLD} are still one health system`, () => {
      const url = 'https://fhir.lakeside.example/r4';
      const rows = [
        ...practices(MULTI_TENANT_THRESHOLD - 2, url),
        { name: 'PRACTICE 1', fhirBaseUrl: url },
        { name: 'Lakeside', fhirBaseUrl: url, aliases: ['Lakeside North', 'lakeside'] },
      ];
      const { brands, aliasesCapped } = mergeSources([source('s', rows)]);
      expect(only(brands).name).to.equal('Lakeside');
      expect(only(brands).aliases).to.have.length(MULTI_TENANT_THRESHOLD - 1);
      expect(aliasesCapped).to.equal(0);

      const more = mergeSources([source('s', [...rows, { name: 'One More', fhirBaseUrl: url }])]);
      expect(only(more.brands).name).to.equal('lakeside.example practices');
      expect(only(more.brands).aliases).to.have.length(MAX_ALIASES);
      expect(more.aliasesCapped).to.equal(1);
    });

    it('uses the platform type’s vendor name, from the row, the host or the source, else the host’s domain', () => {
      const named = (rows: SourceRow[], platformType: PlatformType = 'OTHER') =>
        only(mergeSources([source('s', rows, 100, platformType)]).brands).name;
      expect(named(practices(51, 'https://fhir.netsmartcloud.com/uscore/v1'))).to.equal('Netsmart practices');
      expect(named(practices(51, 'https://fhir.vendor.example/r4'), 'ECLINICALWORKS')).to.equal(
        'eClinicalWorks practices',
      );
      expect(
        named(practices(51, 'https://fhir.vendor.example/r4').map((r) => ({ ...r, platformType: 'MODMED' as const }))),
      ).to.equal('ModMed practices');
      expect(named(practices(51, 'https://patientportal.streamlinemd.com/FHIRServer/FHIR'))).to.equal(
        'streamlinemd.com practices',
      );
      expect(named(practices(51, 'https://10.0.0.7:8443/fhir'))).to.equal('10.0.0.7 practices');
    });
  });

  describe('counting and determinism', () => {
    it('reports rows, rejected and kept per source, rejecting hand-built rows the parsers would have', () => {
      const parsedElsewhere = {
        rows: [{ name: 'Kept', fhirBaseUrl: URL_A }],
        rejected: 3,
        rejections: ['x', 'y', 'z'],
      };
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
      const input = () => [
        loaded('epic', parseSource('fhir-endpoint-bundle', brandFile('epic-legacy-2022/epic_endpoints_r4.json'))),
      ];
      const first = mergeSources(input());
      const ids = first.brands.map((b) => b.id);
      expect(ids).to.deep.equal([...ids].sort());
      expect(mergeSources(input())).to.deep.equal(first);
    });

    it('merges nothing into nothing', () => {
      expect(mergeSources([])).to.deep.equal({
        brands: [],
        duplicatesMerged: 0,
        aliasesCapped: 0,
        npisCapped: 0,
        perSource: [],
      });
    });
  });

  describe('catalog-sized lists (test/fixtures/brands)', () => {
    it('all 156 Lantern lists: 67,645 rows → 29,352 brands (its speed is measured by bench/catalog/import.ts)', () => {
      const sources = lanternFiles().map((file) => loaded(file, parseSource('lantern-endpoints', lanternFile(file))));
      const result = mergeSources(sources);
      expect(sources).to.have.length(156);
      const total = (key: 'rows' | 'rejected' | 'kept') => result.perSource.reduce((sum, s) => sum + s[key], 0);
      expect(total('rows')).to.equal(67_645);
      // 855 rows without a name, 20 named rows whose URL identifies no FHIR system (relative paths, tabs).
      expect(total('rejected')).to.equal(875);
      expect(result.brands).to.have.length(29_352);
      expect(result.duplicatesMerged).to.equal(total('kept') - result.brands.length);
      expect(new Set(result.brands.map((b) => b.id)).size).to.equal(result.brands.length);
      // athenahealth's two lists name the same system: one brand, not two.
      expect(result.brands.filter((b) => b.platformType === 'ATHENAHEALTH').map((b) => b.fhirBaseUrl)).to.include(
        'https://api.platform.athenahealth.com/fhir/r4',
      );
      // The three vendors' shared endpoints are named after the vendor (StreamlineMD has no platform type,
      // so its domain stands in) and are the only brands whose aliases were capped.
      const shared = result.brands
        .filter((b) => b.name.endsWith(' practices'))
        .map((b) => [b.name, b.fhirBaseUrl, b.aliases.length]);
      expect(shared).to.have.deep.members([
        ['athenahealth practices', 'https://api.platform.athenahealth.com/fhir/r4', MAX_ALIASES],
        ['Netsmart practices', 'https://fhir.netsmartcloud.com/uscore/v1', MAX_ALIASES],
        ['streamlinemd.com practices', 'https://patientportal.streamlinemd.com/FHIRServer/FHIR', MAX_ALIASES],
      ]);
      expect(result.aliasesCapped).to.equal(3);
      expect(Math.max(...result.brands.map((b) => b.aliases.length))).to.equal(MAX_ALIASES);
    });

    it('athenahealth’s real list: 17,136 practices on one system → "athenahealth practices" with 50 of them as aliases', () => {
      const parsed = parseSource('lantern-endpoints', lanternFile('athenahealth_Inc_EndpointSources.json'));
      const distinct = new Set(parsed.rows.map((r) => r.name.toLowerCase())).size;
      expect(distinct).to.be.greaterThan(17_000);
      const { brands, aliasesCapped, duplicatesMerged } = mergeSources([loaded('athenahealth', parsed)]);
      const athena = only(brands);
      expect(athena).to.include({
        name: 'athenahealth practices',
        platformType: 'ATHENAHEALTH',
        fhirBaseUrl: 'https://api.platform.athenahealth.com/fhir/r4',
      });
      expect(athena.aliases).to.have.length(MAX_ALIASES);
      expect(athena.aliases.length).to.be.at.most(50);
      // The first practices in the list's order, the one that used to name the brand first of all.
      expect(athena.aliases.slice(0, 2)).to.deep.equal(['NC - Sollus Pediatrics', 'KY - Scott & Jonah Mds']);
      expect(aliasesCapped).to.equal(1);
      expect(duplicatesMerged).to.equal(17_135);
      // Small enough for a search response: the brand was the whole list, now it is a few kilobytes.
      expect(JSON.stringify(athena).length).to.be.lessThan(4_096);
    });

    it('Oracle patient + Epic R4 (2022) + Epic brands (2026, as CSV) → 2,272 brands (synthetic lists of the real ones’ shape)', () => {
      const { csv, rows: csvRows } = epicBrands2026Csv();
      const brandsCsv = parseSource('csv', csv);
      expect(brandsCsv).to.include({ rejected: 0 });
      expect(brandsCsv.rows).to.have.length(csvRows);
      const result = mergeSources([
        loaded(
          'oracle-patient',
          parseSource('fhir-endpoint-bundle', brandFile('oracle-health/millennium_patient_r4_endpoints.json')),
          { priority: 10, platformType: 'CERNER' },
        ),
        loaded(
          'epic-r4-2022',
          parseSource('fhir-endpoint-bundle', brandFile('epic-legacy-2022/epic_endpoints_r4.json')),
          { priority: 20, platformType: 'EPIC' },
        ),
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

      // Harrowgate: named by the 2022 list (higher priority) after the host, epicproxy.harrowgatehg.example, rather
      // than after its first organisation; located by the 2026 one; every name searchable.
      const harrowgate = result.brands.find(
        (b) => b.fhirBaseUrl === 'https://epicproxy.harrowgatehg.example/FHIRProxy/api/FHIR/R4',
      )!;
      expect(harrowgate).to.include({ name: 'Harrowgate Healthcare Group', state: 'MI', city: null });
      expect(harrowgate.aliases).to.include.members([
        'Bayshore Ear, Nose & Throat – Wexford',
        'Harrowgate',
        'Lakeshore Cancer Center',
      ]);
      expect(harrowgate.aliases).to.have.length(13);
      // The 2026 list's "Harrowgate" matches the host as well, but a better source's name always wins.
      expect(harrowgate.aliases[0]).to.equal('Bayshore Ear, Nose & Throat – Wexford');
      expect(result.aliasesCapped).to.equal(0);
    });

    it('Epic brands (2026) alone: 1,243 rows → 762 FHIR systems (the 761 groups of the DERIVED file also fold one /FHIR vs /fhir path pair)', () => {
      const { csv } = epicBrands2026Csv();
      const epicOnly = { ...parseSource('csv', csv) };
      epicOnly.rows = epicOnly.rows.filter((r) => r.platformType === 'EPIC');
      expect(epicOnly.rows).to.have.length(1_243);
      const { brands } = mergeSources([loaded('epic-brands-2026', epicOnly)]);
      expect(brands).to.have.length(762);
      const pair = brands.filter((b) => b.fhirBaseUrl.startsWith('https://api.brackenridge.example/epic-gateway/api/'));
      expect(pair.map((b) => b.fhirBaseUrl).sort()).to.deep.equal([
        'https://api.brackenridge.example/epic-gateway/api/FHIR/R4',
        'https://api.brackenridge.example/epic-gateway/api/fhir/R4',
      ]);
      const network = brands.find(
        (b) => b.fhirBaseUrl === 'https://mychartwa.wrenhaven.example/fhirproxy/api/FHIR/R4',
      )!;
      expect(network.aliases).to.have.length(41);
      // Named after the host, where the first row would name it "Abbot Ridge Hospital and Healthcare".
      expect(network.name).to.equal('Wrenhaven Health & Services');
      expect(
        brands.find((b) => b.fhirBaseUrl === 'https://epicproxy.harrowgatehg.example/FHIRProxy/api/FHIR/R4')!.name,
      ).to.equal('Harrowgate');
    });
  });
});
