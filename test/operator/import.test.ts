// BrandCatalog files through the whole pipeline without a cluster: the demo catalog npm start publishes,
// the vendors' example, and `portico-operator import` as a user runs it.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { repoRoot } from '#core/infra/repo-root.js';
import { importCatalogFile } from '../../operator/src/import-file.js';
import { loadCatalogFile } from '../../operator/src/shared/catalog-spec.js';
import { TestApi } from '../../testkit/api.js';
import { brandFile } from '../../testkit/brand-data.js';
import {
  DEMO_CATALOG,
  demoCatalogYaml,
  OFFLINE_CATALOG,
  offlineCatalogYaml,
  SANDBOX_BRANDS,
  sandboxBrandsJson,
} from '../../testkit/offline-catalog.js';
import { mongoUri } from '../../testkit/services.js';

const run = promisify(execFile);
const DEMO = path.join(repoRoot(), 'examples', 'demo', 'brandcatalog.yaml');

describe('operator: importing BrandCatalog files', () => {
  let api: TestApi;
  let dir: string;
  before(async () => {
    api = await TestApi.start();
    dir = await mkdtemp(path.join(os.tmpdir(), 'portico-import-'));
  });
  after(async () => {
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('publishes the demo catalog offline: the demo brands (merged duplicates, affiliates as aliases, every logo rendered) and the real lists', async () => {
    const report = await importCatalogFile(DEMO, {
      store: api.services.snapshots,
      storage: api.services.storage,
      ref: api.config.catalog,
      fetchText: async (url) => expect.fail(`the demo catalog must not need the network (fetched ${url})`),
    });
    expect(report).to.deep.include({ active: true });
    const demo = report.sources.filter((s) => s.name.startsWith('demo-'));
    expect(demo.reduce((sum, s) => sum + s.rowsRead, 0)).to.equal(17); // 16 brands once one duplicate is merged
    expect(report.brandCount).to.be.greaterThan(5000);
    expect(report.logos).to.include({ rendered: 18, failed: 0 }); // the demo's and the sandbox's artwork; the lists have none
    await api.services.activeCatalog.refresh();
    const sandbox = await api.request('GET', '/api/sdk/v1/catalog/brands?q=portico%20sandbox');
    expect(sandbox.body.brands.map((b: { fhirBaseUrl: string }) => b.fhirBaseUrl)).to.have.members([
      'http://127.0.0.1:8095/fhir/sandbox-health',
      'http://127.0.0.1:8095/fhir/sandbox-clinic',
    ]);
    // The README's tour: real names are found.
    for (const q of ['mayo clinic', 'kaiser', 'stanford']) {
      const found = await api.request('GET', `/api/sdk/v1/catalog/brands?q=${encodeURIComponent(q)}`);
      expect(found.body.count, q).to.be.greaterThan(0);
    }
    const riverbend = await api.request('GET', '/api/sdk/v1/catalog/brands?q=riverbend%20urgent');
    expect(riverbend.body.brands[0]).to.include({ name: 'Riverbend Health Partners', platformType: 'CERNER' });
    expect(riverbend.body.brands[0].aliases).to.include('Riverbend Urgent Care');
    const lakeside = await api.request('GET', "/api/sdk/v1/catalog/brands?q=lakeside%20children's");
    expect(lakeside.body.brands[0].aliases).to.include("Lakeside Children's Hospital");
    const again = await importCatalogFile(DEMO, {
      store: api.services.snapshots,
      storage: api.services.storage,
      ref: api.config.catalog,
    });
    expect(again.snapshot.created).to.equal(false);
    expect(again.snapshot.id).to.equal(report.snapshot.id);
  });

  it('does not publish when object storage fails (a catalog stripped of its artwork is worse than the old one)', async () => {
    const ref = { namespace: 'tests', name: `storage-down-${Date.now().toString(36)}` };
    const broken = {
      ...api.services.storage,
      exists: async () => false,
      put: async () => {
        throw new Error('connection refused');
      },
      get: api.services.storage.get.bind(api.services.storage),
      delete: api.services.storage.delete.bind(api.services.storage),
      publicUrl: api.services.storage.publicUrl.bind(api.services.storage),
    };
    let error: unknown;
    await importCatalogFile(DEMO, { store: api.services.snapshots, storage: broken, ref }).catch(
      (e: unknown) => (error = e),
    );
    expect(String(error)).to.match(/object storage failed for \d+ logos/);
    expect(await api.services.snapshots.active(ref)).to.equal(null);
  });

  it('keeps the offline examples as testkit/offline-catalog.ts writes them, and publishes the offline one without the network', async () => {
    for (const [file, text] of [
      [OFFLINE_CATALOG, offlineCatalogYaml()],
      [DEMO_CATALOG, demoCatalogYaml()],
      [SANDBOX_BRANDS, sandboxBrandsJson()],
    ] as const)
      expect(
        await readFile(path.join(repoRoot(), file), 'utf8'),
        `${file} is out of date: npm run build && node dist/testkit/offline-catalog.js`,
      ).to.equal(text);
    const ref = { namespace: 'tests', name: `offline-${Date.now().toString(36)}` };
    const report = await importCatalogFile(path.join(repoRoot(), OFFLINE_CATALOG), {
      store: api.services.snapshots,
      storage: api.services.storage,
      ref,
      fetchText: async (url) => expect.fail(`the offline catalog must not need the network (fetched ${url})`),
    });
    expect(report.sources).to.have.length(48);
    expect(report.sources.every((s) => s.rowsRead > 0)).to.equal(true);
    expect(report.brandCount).to.be.greaterThan(5000);
  });

  it('validates the vendors example', async () => {
    const file = await loadCatalogFile(path.join(repoRoot(), 'examples', 'brandcatalog-vendors.yaml'));
    expect(file.spec.sources.map((s) => s.format)).to.include.members([
      'smart-brands-bundle',
      'fhir-endpoint-bundle',
      'lantern-endpoints',
    ]);
    expect(file.spec.sources.every((s) => s.url?.startsWith('https://'))).to.equal(true);
  });

  it('refuses invalid files with a message naming the problem', async () => {
    const cases: [string, RegExp][] = [
      ['kind: Nope', /kind|apiVersion/],
      [
        'apiVersion: catalog.portico.dev/v1alpha1\nkind: BrandCatalog\nmetadata: {name: x}\nspec: {sources: []}',
        /sources/,
      ],
      [
        'apiVersion: catalog.portico.dev/v1alpha1\nkind: BrandCatalog\nmetadata: {name: x}\nspec:\n  sources: [{name: a, format: csv}]',
        /exactly one of url, configMapRef and inline/,
      ],
      [
        'apiVersion: catalog.portico.dev/v1alpha1\nkind: BrandCatalog\nmetadata: {name: x}\nspec:\n  sources: [{name: a, format: xml, inline: x}]',
        /format/,
      ],
      [
        'apiVersion: catalog.portico.dev/v1alpha1\nkind: BrandCatalog\nmetadata: {name: x}\nspec:\n  sources: [{name: a, format: csv, inline: x}, {name: a, format: csv, inline: y}]',
        /unique/,
      ],
      [
        'apiVersion: catalog.portico.dev/v1alpha1\nkind: BrandCatalog\nmetadata: {name: x}\nspec:\n  refreshInterval: 30s\n  sources: [{name: a, format: csv, inline: x}]',
        /between 1m and 720h/,
      ],
    ];
    for (const [yaml, message] of cases) {
      const file = path.join(dir, 'bad.yaml');
      await writeFile(file, yaml);
      let error: unknown;
      await loadCatalogFile(file).catch((e: unknown) => (error = e));
      expect(String((error as { detail?: string })?.detail ?? error), yaml).to.match(message);
    }
  });

  describe('portico-operator import -f', () => {
    const databases: string[] = [];
    after(async () => {
      const client = await new MongoClient(mongoUri()).connect();
      for (const name of databases) await client.db(name).dropDatabase();
      await client.close();
    });
    const cli = (file: string, database: string) =>
      run(process.execPath, [path.join(repoRoot(), 'bin/portico-operator.js'), 'import', '-f', file], {
        env: {
          PATH: process.env.PATH ?? '',
          MONGODB_URI: `${mongoUri()}${database}`,
          PORTICO_OBJECT_STORAGE: `file://${dir}/objects`,
        },
      }).then(
        ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
        (error: { code: number; stdout: string; stderr: string }) => error,
      );

    it('prints a summary of a vendor-sized list (the Oracle Health fixture), exits 3 when a collapse is held back, 1 on a broken source', async () => {
      const database = `t_import_${Date.now().toString(36)}`;
      databases.push(database);
      // The fixture is stored compressed; the operator reads the plain file, as a vendor's list would be.
      const list = path.join(dir, 'millennium_patient_r4_endpoints.json');
      await writeFile(list, brandFile('oracle-health/millennium_patient_r4_endpoints.json'));
      const oracle = path.join(dir, 'oracle.yaml');
      await writeFile(
        oracle,
        `apiVersion: catalog.portico.dev/v1alpha1\nkind: BrandCatalog\nmetadata: {name: real, namespace: tests}\nspec:\n  rollout: {minBrandRatioPercent: 50}\n  sources:\n    - {name: oracle, format: fhir-endpoint-bundle, platformType: CERNER, url: "file:${list}"}\n`,
      );
      const first = await cli(oracle, database);
      expect(first.code, first.stderr).to.equal(0);
      expect(first.stdout)
        .to.match(/catalog tests\/real/)
        .and.match(/1359 rows read, 0 rejected/)
        .and.match(/brands: 1359/)
        .and.match(/active/);

      const tiny = path.join(dir, 'tiny.yaml');
      await writeFile(
        tiny,
        `apiVersion: catalog.portico.dev/v1alpha1\nkind: BrandCatalog\nmetadata: {name: real, namespace: tests}\nspec:\n  rollout: {minBrandRatioPercent: 50}\n  sources:\n    - {name: one, format: csv, inline: "name,fhirBaseUrl\\nOnly One,https://fhir.only-one.example/r4"}\n`,
      );
      const held = await cli(tiny, database);
      expect(held.code).to.equal(3);
      expect(held.stdout).to.match(/NOT activated/);

      const broken = path.join(dir, 'broken.yaml');
      await writeFile(
        broken,
        `apiVersion: catalog.portico.dev/v1alpha1\nkind: BrandCatalog\nmetadata: {name: real, namespace: tests}\nspec:\n  sources:\n    - {name: bad, format: fhir-endpoint-bundle, inline: "not json"}\n`,
      );
      const failed = await cli(broken, database);
      expect(failed.code).to.equal(1);
      expect(failed.stderr).to.match(/source "bad"/);
    });
  });
});
