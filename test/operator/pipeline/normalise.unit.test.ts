import { expect } from 'chai';
import { cleanName, inferPlatformType, normaliseFhirBaseUrl } from '../../../operator/src/pipeline/normalise.js';
import { brandFile, lanternFile, lanternFiles } from '../../../testkit/brand-data.js';

interface Bundle {
  entry: { resource: { resourceType: string; address?: string; contained?: { address?: { state?: string }[] }[] } }[];
}
const endpointAddresses = (file: string): string[] =>
  (JSON.parse(brandFile(file)) as Bundle).entry.flatMap((e) =>
    e.resource.resourceType === 'Endpoint' ? [e.resource.address!] : [],
  );
const lanternUrls = (file: string): string[] =>
  (JSON.parse(lanternFile(file)) as { Endpoints: { URL: string }[] }).Endpoints.map((e) => e.URL);

describe('operator pipeline: normalisation', () => {
  describe('normaliseFhirBaseUrl (the FHIR system identity)', () => {
    const same: [string, string, string][] = [
      ['an already normal URL', 'https://fhir.example.org/r4', 'https://fhir.example.org/r4'],
      ['http upgraded to https', 'http://fhir.example.org/r4', 'https://fhir.example.org/r4'],
      [
        'a loopback development server keeps http and its port',
        'http://127.0.0.1:8095/fhir/x/',
        'http://127.0.0.1:8095/fhir/x',
      ],
      ['a loopback URL without a port is upgraded as before', 'http://localhost/FHIR', 'https://localhost/FHIR'],
      [
        'scheme and host lower-cased, path case kept',
        'HTTPS://FHIR.Example.ORG/Prod/FHIR/R4',
        'https://fhir.example.org/Prod/FHIR/R4',
      ],
      ['a trailing slash', 'https://fhir.example.org/r4/', 'https://fhir.example.org/r4'],
      ['several trailing slashes', 'https://fhir.example.org/r4///', 'https://fhir.example.org/r4'],
      ['a bare host with a slash', 'https://fhir.example.org/', 'https://fhir.example.org'],
      ['the default https port', 'https://fhir.example.org:443/r4', 'https://fhir.example.org/r4'],
      ['the default http port once upgraded', 'http://fhir.example.org:80/r4', 'https://fhir.example.org/r4'],
      [
        ':443 on an http URL (the https default once upgraded)',
        'http://fhir.example.org:443/r4',
        'https://fhir.example.org/r4',
      ],
      ['a fragment', 'https://fhir.example.org/r4#top', 'https://fhir.example.org/r4'],
      ['surrounding whitespace', '  https://fhir.example.org/r4\n', 'https://fhir.example.org/r4'],
      ['no scheme', 'fhir.example.org/r4', 'https://fhir.example.org/r4'],
      ['no scheme, with a port', 'fhir.example.org:8443/r4/', 'https://fhir.example.org:8443/r4'],
      ['a protocol-relative URL', '//fhir.example.org/r4', 'https://fhir.example.org/r4'],
      ['an internationalised host (punycode)', 'https://BÜCHER.example/fhir', 'https://xn--bcher-kva.example/fhir'],
      [
        'MEDITECH’s explicit :443 (real Lantern row)',
        'https://mtrestapis-live02.steward.org:443/v1/uscore/R4',
        'https://mtrestapis-live02.steward.org/v1/uscore/R4',
      ],
    ];
    for (const [what, raw, expected] of same) {
      it(`normalises ${what}`, () => expect(normaliseFhirBaseUrl(raw)).to.equal(expected));
    }

    it('keeps a non-default port, and :80 when https is explicit', () => {
      expect(normaliseFhirBaseUrl('https://fhirserver.astronautehr.com:9443/fhir-server/api/v4/')).to.equal(
        'https://fhirserver.astronautehr.com:9443/fhir-server/api/v4',
      );
      expect(normaliseFhirBaseUrl('https://fhir.example.org:80/r4')).to.equal('https://fhir.example.org:80/r4');
    });

    it('keeps the query (Veradigm tells tenants apart by it) but drops a trailing slash before it', () => {
      const url = 'https://fhir.fhirpoint.open.allscripts.com/R4/open-OCC-FhirPoint-Echo?cust=10344843';
      expect(normaliseFhirBaseUrl(url)).to.equal(url);
      expect(normaliseFhirBaseUrl('https://fhir.example.org/r4/?tenant=a#x')).to.equal(
        'https://fhir.example.org/r4?tenant=a',
      );
    });

    it('keeps systems that differ only in path case apart', () => {
      expect(normaliseFhirBaseUrl('https://fhir.example.org/FHIR')).to.not.equal(
        normaliseFhirBaseUrl('https://fhir.example.org/fhir'),
      );
    });

    const unusable: [string, string][] = [
      ['an empty string', ''],
      ['only whitespace', '   '],
      ['an ftp URL', 'ftp://fhir.example.org/r4'],
      ['a mailto URL', 'mailto:fhir@example.org'],
      ['a javascript URL', 'javascript:alert(1)'],
      ['a data URL', 'data:text/plain,hello'],
      ['credentials', 'https://user:secret@fhir.example.org/r4'],
      ['a user name alone', 'https://user@fhir.example.org/r4'],
      ['no host', 'https:///r4'],
      ['no authority', 'https:fhir.example.org/r4'],
      ['a relative path (real First Insight row)', 'api/nce/R4'],
      [
        'a pasted label before the URL (real Astronaut row)',
        ': https://fhirserver.astronautehr.com:9443/fhir-server/api/v4/',
      ],
      [
        'a tab inside the host (real First Insight row)',
        'https://127.0.0.1\teyeassociatesofgreenbayscwi.ficintegrations.com/API/GMPibL/R4',
      ],
      ['a space inside', 'https://fhir.example.org/r 4'],
      ['a single-label host without a scheme', 'localhost:8080/fhir'],
      ['an invalid host', 'https://exa mple.org/r4'],
    ];
    for (const [what, raw] of unusable) {
      it(`rejects ${what}`, () => expect(normaliseFhirBaseUrl(raw)).to.equal(null));
    }

    it('is idempotent over every real Lantern URL', () => {
      let checked = 0;
      for (const file of lanternFiles()) {
        for (const url of lanternUrls(file)) {
          const once = normaliseFhirBaseUrl(url);
          if (once === null) continue;
          checked += 1;
          expect(normaliseFhirBaseUrl(once), url).to.equal(once);
          expect(once).to.match(/^https:\/\/[^/?#A-Z]+(\/[^?#]*[^/?#])?(\?[^#]*)?$/);
        }
      }
      expect(checked).to.equal(67_645 - 21);
    });

    it('gives the Lantern lists the distinct-URL counts SOURCES.md reports for this identity', () => {
      // The fixture lists: 30,215 distinct raw URLs; 30,199 after slash, host case, http/https and :443; 30,158 after
      // also lower-casing paths. Those figures include 19 URLs this identity rejects (16 relative `api/…/R4`
      // paths, a pasted ": https://…", two with a tab inside), and nothing else differs.
      const raw = new Set<string>();
      const identities = new Set<string>();
      for (const file of lanternFiles()) {
        for (const url of lanternUrls(file)) {
          raw.add(url);
          const identity = normaliseFhirBaseUrl(url);
          if (identity !== null) identities.add(identity);
        }
      }
      expect(raw.size).to.equal(30_215);
      expect(identities.size).to.equal(30_199 - 19);
      expect(new Set([...identities].map((u) => u.toLowerCase())).size).to.equal(30_158 - 19);
    });
  });

  describe('cleanName', () => {
    it('trims and collapses whitespace of every kind', () => {
      expect(cleanName('  Kaiser   Permanente\u00a0– Georgia\n')).to.equal('Kaiser Permanente – Georgia');
      expect(cleanName('\t')).to.equal('');
    });

    it('composes accents so the same name typed two ways is one name', () => {
      expect(cleanName('Clinica Sa\u0303o Jose\u0301')).to.equal('Clinica São José');
    });
  });

  describe('inferPlatformType', () => {
    it('recognises every Oracle Health endpoint (Millennium patient and provider, Soarian) as CERNER', () => {
      for (const file of [
        'millennium_patient_r4_endpoints.json',
        'millennium_provider_r4_endpoints.json',
        'soarian_patient_r4_endpoints.json',
      ]) {
        const urls = endpointAddresses(`oracle-health/${file}`);
        expect(
          urls.map((u) => inferPlatformType(normaliseFhirBaseUrl(u)!)).filter((p) => p !== 'CERNER'),
          file,
        ).to.deep.equal([]);
      }
    });

    it('recognises Epic’s listed endpoints by their /api/FHIR/ path, in any case, except the one that does not use it', () => {
      const urls = endpointAddresses('epic-legacy-2022/epic_endpoints_r4.json').map((u) => normaliseFhirBaseUrl(u)!);
      const notEpic = urls.filter((u) => inferPlatformType(u) !== 'EPIC');
      expect(notEpic).to.deep.equal(['https://fhir-api.ravenscroft.example/patient/fhir/R4']);
      // The list writes the path in lower case twice (/api/fhir/R4, /api/fhir/r4): still Epic's.
      expect(urls.filter((u) => /\/api\/fhir\//.test(u)).map(inferPlatformType)).to.deep.equal(['EPIC', 'EPIC']);
      expect(inferPlatformType('https://fhir.genesishcs.org/api/FHIR/R4')).to.equal('EPIC');
    });

    const vendorLists: [string, string][] = [
      ['athenahealth_Inc_EndpointSources.json', 'ATHENAHEALTH'],
      ['Practice_Fusion_EndpointSources.json', 'PRACTICE_FUSION'],
      ['eClinicalWorks_LLC_EndpointSources.json', 'ECLINICALWORKS'],
      ['Greenway_Health_LLC_EndpointSources.json', 'GREENWAY'],
      ['MEDHOST_EndpointSources.json', 'MEDHOST'],
      ['Netsmart_Technologies_EndpointSources.json', 'NETSMART'],
      ['NextGen_Healthcare_EndpointSources.json', 'NEXTGEN'],
      ['Modernizing_Medicine_EndpointSources.json', 'MODMED'],
      ['Medical_Information_Technology_Inc_MEDITECH_1_EndpointSources.json', 'MEDITECH'],
      ['Cerner_Corporation_EndpointSources.json', 'CERNER'],
      ['Epic_Systems_Corporation_EndpointSources.json', 'EPIC'],
    ];
    for (const [file, platform] of vendorLists) {
      it(`infers ${platform} for every row of ${file}`, () => {
        const inferred = new Set(lanternUrls(file).map((u) => inferPlatformType(normaliseFhirBaseUrl(u)!)));
        expect([...inferred]).to.deep.equal([platform]);
      });
    }

    it('infers nothing where the real lists show a host or path shared by vendors', () => {
      // Veradigm's and Altera's lists both use FHIRPoint; Office Practicum and CareCloud copy Epic's path.
      expect(
        inferPlatformType('https://fhir.fhirpoint.open.allscripts.com/R4/open-OCC-FhirPoint-Echo?cust=10344843'),
      ).to.equal(undefined);
      expect(inferPlatformType('https://applications.op.healthcare/2198/api/FHIR/R4')).to.equal(undefined);
      expect(inferPlatformType('https://api-datamanager.development.carecloud.com:8081/api/fhir/R4')).to.equal(
        undefined,
      );
      expect(inferPlatformType('https://fhir.example.org/r4')).to.equal(undefined);
      expect(inferPlatformType('not a url')).to.equal(undefined);
    });
  });
});
