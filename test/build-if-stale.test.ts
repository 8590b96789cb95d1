// scripts/build-if-stale.mjs, npm start's build step: it compiles only when a source is newer than the last build.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '#core/infra/repo-root.js';

describe('scripts: build-if-stale (npm start builds only what changed)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'portico-build-'));
    writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ include: ['src/**/*.ts'] }));
    mkdirSync(path.join(dir, 'src'));
    writeFileSync(path.join(dir, 'src', 'a.ts'), 'export {};\n');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** What the step said; the stand-in build writes dist/.tsbuildinfo and says "built" (then fails with `fail`). */
  const step = (fail = false) =>
    execFileSync(process.execPath, [path.join(repoRoot(), 'scripts', 'build-if-stale.mjs')], {
      cwd: dir,
      env: {
        ...process.env,
        PORTICO_BUILD_COMMAND: `node -e "require('fs').mkdirSync('dist',{recursive:true});require('fs').writeFileSync('dist/.tsbuildinfo','')" && echo built${fail ? ' && exit 2' : ''}`,
      },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });

  it('builds the first time, then not until a source is newer than the build', () => {
    expect(step()).to.include('built');
    expect(step()).to.equal('');
    const saved = new Date(); // after the build began
    utimesSync(path.join(dir, 'src', 'a.ts'), saved, saved);
    expect(step()).to.include('built');
    expect(step()).to.equal('');
  });

  it('builds again after a build that failed (tsc writes its build info even then)', () => {
    utimesSync(path.join(dir, 'src', 'a.ts'), new Date(), new Date());
    expect(() => step(true)).to.throw(); // the step fails as the build did
    expect(step()).to.include('built');
    expect(step()).to.equal('');
  });
});
