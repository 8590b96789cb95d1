// Schema fuzzing: Schemathesis, pinned in scripts/ensure-fuzz-tools.sh, against the served
// /openapi.json of a real API (MongoDB, Redis), one run per surface with that surface's real credential and
// real ids to aim at. Each run must end with no failure of any check: no 5xx, every response of a documented
// status, content type, headers and schema, invalid input refused, valid input accepted (save what only the
// server's state decides, listed in testkit/schemathesis.ts), and the stateful phase over the links it
// infers. The example budget and the seed are fixed so a CI run stays within a few minutes and reproduces;
// PORTICO_FUZZ_EXAMPLES and PORTICO_FUZZ_SEED change them for a longer or another run.
import { expect } from 'chai';
import { TestApi } from '../../testkit/api.js';
import {
  ensureSchemathesis,
  FUZZ_SURFACES,
  runSchemathesis,
  seedFuzzData,
  surfacesFor,
  type FuzzData,
  type FuzzOptions,
  type FuzzResult,
} from '../../testkit/schemathesis.js';

const OPTIONS: FuzzOptions = {
  seed: Number(process.env.PORTICO_FUZZ_SEED ?? 20261123),
  maxExamples: Number(process.env.PORTICO_FUZZ_EXAMPLES ?? 100),
  phases: ['examples', 'coverage', 'fuzzing', 'stateful'],
  checks: ['all'],
};

describe('fuzz: Schemathesis against /openapi.json, every surface with its own credential', function () {
  this.timeout(180_000);
  this.slow(60_000);
  let api: TestApi;
  let data: FuzzData;
  let version: string;
  const results: FuzzResult[] = [];

  before(async () => {
    version = ensureSchemathesis();
    api = await TestApi.start({ redis: true });
    data = await seedFuzzData(api);
  });
  after(async () => {
    await api?.close();
    if (results.length > 0) console.log(table(version, results));
  });

  for (const name of FUZZ_SURFACES) {
    it(`${name}: no failure`, async () => {
      const surface = surfacesFor(data).find((s) => s.name === name)!;
      const result = await runSchemathesis(api.url, surface, OPTIONS);
      results.push(result);
      const found = result.failures.map((f) => `${f.code} ${f.title}: ${f.operation}`);
      const report = [...found, ...result.errors, '', result.failuresText.slice(0, 20_000), result.summary].join('\n');
      expect(result.operations.tested, report).to.be.greaterThan(0);
      expect(result.operations.tested, report).to.equal(result.operations.selected);
      expect(result.errors, report).to.deep.equal([]);
      expect(found, report).to.deep.equal([]);
      expect(result.exitCode, report).to.equal(0);
    });
  }
});

function table(version: string, results: FuzzResult[]): string {
  const rows = results.map((r) => [
    r.surface,
    `${r.operations.tested}/${r.operations.selected}`,
    String(r.cases),
    String(r.requests),
    Object.entries(r.statuses)
      .sort()
      .map(([status, count]) => `${status}:${count}`)
      .join(' '),
    `${r.links.covered}/${r.links.total}`,
    String(r.failures.length + r.errors.length),
    `${(r.durationMs / 1000).toFixed(1)} s`,
  ]);
  const total = (pick: (r: FuzzResult) => number) => String(results.reduce((sum, r) => sum + pick(r), 0));
  rows.push([
    'total',
    total((r) => r.operations.tested),
    total((r) => r.cases),
    total((r) => r.requests),
    '',
    `${total((r) => r.links.covered)}/${total((r) => r.links.total)}`,
    total((r) => r.failures.length + r.errors.length),
    `${(results.reduce((s, r) => s + r.durationMs, 0) / 1000).toFixed(1)} s`,
  ]);
  const head = ['surface', 'operations', 'test cases', 'requests', 'responses by status', 'links', 'failures', 'time'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `    ${cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')}`;
  return [
    `\n    ${version}, seed ${OPTIONS.seed}, ${OPTIONS.maxExamples} examples per operation, phases ${OPTIONS.phases.join(',')}, checks ${OPTIONS.checks.join(',')}`,
    line(head),
    ...rows.map(line),
    `    commands (credentials in the configuration file): ${results.map((r) => `\n      ${r.command}`).join('')}`,
  ].join('\n');
}
