// The container image as scripts/build-image.sh builds it (`npm run image`): what its config says, what its
// layers hold (Node 24 from the lockfile's node-linux-<arch> package, not Debian's nodejs), that a second build
// gives the same digest, and the API from the image serving the catalog under runc with the chart's read-only root
// and writable mounts, then stopping on SIGTERM in time.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { catalogKey } from '#core/catalog/snapshots.js';
import { repoRoot } from '#core/infra/repo-root.js';
import { TestApi } from '../../testkit/api.js';
import { publishTo, realSources } from '../../testkit/catalog.js';
import {
  buildImage,
  builtImage,
  IMAGE_BUILD_TIMEOUT_MS,
  requireRoot,
  runContainer,
  unpackImage,
  untilServing,
  type BuiltImage,
  type Container,
} from '../../testkit/image.js';
import { testRedisUrl } from '../../testkit/services.js';
import { freePort } from '../../testkit/machine.js';

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as {
  version: string;
  license: string;
};
const git = async (...args: string[]) => (await run('git', args, { cwd: repoRoot() })).stdout.trim();
const sha256 = (file: string) =>
  new Promise<string>((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
      .on('error', reject);
  });

describe('image: built by scripts/build-image.sh', function () {
  this.timeout(120_000);
  let image: BuiltImage;
  let rootfs: string;

  before(async function () {
    this.timeout(IMAGE_BUILD_TIMEOUT_MS); // a first build runs mmdebstrap and npm ci
    requireRoot(this);
    image = await builtImage();
    ({ rootfs } = await unpackImage(image));
  });

  it('runs as 10001 through tini, serves the API by default on 8080, in production mode', () => {
    const { config } = image.imageConfig;
    expect(config.User).to.equal('10001:10001');
    expect(config.Entrypoint).to.deep.equal(['/usr/bin/tini', '--']);
    expect(config.Cmd).to.deep.equal(['node', '/app/bin/portico.js', 'serve']);
    expect(config.WorkingDir).to.equal('/app');
    expect(Object.keys(config.ExposedPorts ?? {})).to.deep.equal(['8080/tcp']);
    expect(config.Env).to.include.members([
      'NODE_ENV=production',
      'NODE_USE_SYSTEM_CA=1',
      'HOST=0.0.0.0',
      'PORTICO_DATA_DIR=/data',
    ]);
    expect(image.name).to.equal(`portico:${pkg.version}`);
  });

  it('is the size docs/deployment.md says, within 5 %', () => {
    const text = readFileSync(path.join(repoRoot(), 'docs', 'deployment.md'), 'utf8');
    const stated = /^Size: (\d+) MiB unpacked/m.exec(text);
    expect(stated, 'docs/deployment.md states no "Size: <n> MiB unpacked"').to.not.equal(null);
    const mib = image.sizeBytes / 1048576;
    expect(Math.abs(mib - Number(stated![1])) / mib, `built: ${mib.toFixed(1)} MiB unpacked`).to.be.at.most(0.05);
  });

  it('labels the version, the revision, the time of the commit, the title and the licence', async () => {
    const labels = image.imageConfig.config.Labels ?? {};
    const created = process.env.SOURCE_DATE_EPOCH
      ? new Date(Number(process.env.SOURCE_DATE_EPOCH) * 1000)
      : new Date(await git('log', '-1', '--format=%cI'));
    const dirty = (await git('status', '--porcelain', '--', '.', ':!.tools')) !== '';
    expect(labels).to.include({
      'org.opencontainers.image.title': 'portico',
      'org.opencontainers.image.version': pkg.version,
      'org.opencontainers.image.revision': `${await git('rev-parse', 'HEAD')}${dirty ? '-dirty' : ''}`,
      'org.opencontainers.image.created': created.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      'org.opencontainers.image.licenses': pkg.license,
    });
    // The source label is an https URL or absent (no repository field and no remote to take it from).
    if ('org.opencontainers.image.source' in labels)
      expect(labels['org.opencontainers.image.source']).to.match(/^https:\/\//);
    // No time of the build anywhere: the config's and the history's come from the commit and the base.
    expect(image.imageConfig.created).to.equal(labels['org.opencontainers.image.created']);
    expect(image.imageConfig.history?.map((h) => h.created)).to.deep.equal([
      '2025-08-09T00:00:00Z', // the Debian base
      '2025-08-09T00:00:00Z', // Node
      labels['org.opencontainers.image.created'],
    ]);
  });

  it('holds the compiled programs and production dependencies only, owned by root, and /data for user 10001', () => {
    for (const file of [
      'bin/portico.js',
      'bin/portico-operator.js',
      'bin/check-node.js', // the Node version guard both load first
      'dist/api/src/main.js',
      'dist/operator/src/main.js',
      'dist/core/src/config.js',
      'package.json',
      'examples/demo/brandcatalog.yaml',
      'examples/brand-lists/NOTICE.md', // the real brand lists the demo names, with their licence
    ]) {
      expect(existsSync(path.join(rootfs, 'app', file)), file).to.equal(true);
    }
    for (const module of ['koa', 'mongodb', 'sharp', `@img/sharp-linux-${process.arch}`, '@kubernetes/client-node']) {
      expect(existsSync(path.join(rootfs, 'app/node_modules', module, 'package.json')), module).to.equal(true);
    }
    for (const devOnly of [
      'mocha',
      'typescript',
      'chai',
      'nock',
      'autocannon',
      '@types/mocha',
      'standardwebhooks',
      `node-linux-${process.arch}`, // Node itself: in a layer of its own, not in the app's dependencies
      '.bin/node',
    ]) {
      expect(existsSync(path.join(rootfs, 'app/node_modules', devOnly)), devOnly).to.equal(false);
    }
    for (const absent of [
      'dist/test',
      'dist/bench',
      'test',
      'api',
      'dist/api/src/main.js.map',
      'node_modules/koa/lib/application.d.ts',
    ]) {
      expect(existsSync(path.join(rootfs, 'app', absent)), absent).to.equal(false);
    }
    const app = statSync(path.join(rootfs, 'app/dist/api/src/main.js'));
    expect([app.uid, app.gid, app.mode & 0o022]).to.deep.equal([0, 0, 0]); // the app cannot change its own code
    const data = statSync(path.join(rootfs, 'data'));
    expect([data.uid, data.gid, data.isDirectory()]).to.deep.equal([10001, 10001, true]);
    expect(readFileSync(path.join(rootfs, 'etc/passwd'), 'utf8')).to.match(/^portico:x:10001:10001:[^:]*:\/data:/m);
    for (const binary of ['usr/local/bin/node', 'usr/bin/tini', 'etc/ssl/certs/ca-certificates.crt'])
      expect(existsSync(path.join(rootfs, binary)), binary).to.equal(true);
    expect(existsSync(path.join(rootfs, 'usr/bin/apt-get'))).to.equal(false);
    // 382 MiB: 66 of Debian, 121 of Node, 195 of app (Debian's nodejs 20 with its libraries was 166 of Debian in all)
    expect(image.sizeBytes / 2 ** 20, 'MiB unpacked').to.be.below(420);
  });

  it("runs the lockfile's Node (node-linux-<arch>, the binary npm ci installed for the tests), not Debian's", async () => {
    const lock = JSON.parse(readFileSync(path.join(repoRoot(), 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version: string }>;
    };
    const pinned = lock.packages[`node_modules/node-linux-${process.arch}`]?.version;
    expect(pinned, `the lockfile's node-linux-${process.arch}`).to.match(/^24\./);
    expect(await sha256(path.join(rootfs, 'usr/local/bin/node'))).to.equal(
      await sha256(path.join(repoRoot(), 'node_modules', `node-linux-${process.arch}`, 'bin', 'node')),
    );
    expect(existsSync(path.join(rootfs, 'usr/local/share/doc/node/LICENSE'))).to.equal(true);
    expect(existsSync(path.join(rootfs, 'usr/bin/node')), 'usr/bin/node').to.equal(false);
    const status = readFileSync(path.join(rootfs, 'var/lib/dpkg/status'), 'utf8');
    expect(status).to.not.match(/^Package: (nodejs|libnode\d+)$/m);
    expect(status).to.match(/^Package: libstdc\+\+6$/m); // what the binary links besides libc (and libgcc_s)
    expect(image.output).to.include(`node     ${pinned} (node-linux-${process.arch}, /usr/local/bin/node)`);

    // As the container runs it: the image's PATH finds it, its libraries are there, and it trusts the system's
    // certificates (Debian's ca-certificates, as Debian's nodejs did) besides its own.
    const container = await runContainer(image, {
      args: [
        'node',
        '-p',
        "const tls = require('node:tls'); [process.version, process.execPath, " +
          "tls.getCACertificates('system').length > 100, " +
          "tls.getCACertificates('default').length > tls.getCACertificates('bundled').length].join(' ')",
      ],
    });
    try {
      expect(await container.exited, container.logs()).to.equal(0);
      expect(container.logs().trim()).to.equal(`v${pinned} /usr/local/bin/node true true`);
    } finally {
      await container.remove();
    }
  });

  it('writes a docker-archive tagged portico:<version> for docker load and kind load', async () => {
    const { stdout } = await run('tar', ['-xOf', image.archive, 'manifest.json']);
    const [entry] = JSON.parse(stdout) as { RepoTags: string[]; Config: string }[];
    expect(entry!.RepoTags).to.deep.equal([`docker.io/library/${image.name}`]); // what `docker load` lists as portico:<version>
    expect(image.output)
      .to.include(image.digest)
      .and.match(/MiB unpacked/);
  });

  it('is what the Dockerfile declares too: packages, user, entrypoint, command, port, environment and labels', () => {
    // The Dockerfile cannot be built here (no registry for FROM): this keeps its runtime stage in step.
    const text = readFileSync(path.join(repoRoot(), 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
    const runtime = text.slice(text.lastIndexOf('\nFROM '));
    const instructions = runtime.split('\n').filter((line) => /^[A-Z]+ /.test(line));
    const all = (name: string) =>
      instructions.filter((line) => line.startsWith(`${name} `)).map((line) => line.slice(name.length + 1).trim());
    const one = (name: string) => all(name).at(-1)!;
    const { config } = image.imageConfig;
    expect(one('USER')).to.equal(config.User);
    expect(one('WORKDIR')).to.equal(config.WorkingDir);
    expect(JSON.parse(one('ENTRYPOINT'))).to.deep.equal(config.Entrypoint);
    expect(JSON.parse(one('CMD'))).to.deep.equal(config.Cmd);
    expect(all('EXPOSE').map((port) => `${port}/tcp`)).to.deep.equal(Object.keys(config.ExposedPorts ?? {}));
    expect(all('ENV').flatMap((line) => line.split(/\s+/))).to.have.members(config.Env ?? []);
    const labels = Object.fromEntries(
      all('LABEL').flatMap((line) => [...line.matchAll(/([\w.-]+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!])),
    );
    const imageLabels = config.Labels ?? {};
    expect(Object.keys(labels).filter((k) => k !== 'org.opencontainers.image.source')).to.have.members(
      Object.keys(imageLabels).filter((k) => k !== 'org.opencontainers.image.source'),
    );
    for (const [key, value] of Object.entries(labels))
      if (!value.includes('${')) expect(imageLabels[key], key).to.equal(value);
    const script = readFileSync(path.join(repoRoot(), 'scripts/build-image.sh'), 'utf8');
    const packages = /apt-get install -y --no-install-recommends ([\w.+ -]+?) &&/
      .exec(runtime)?.[1]!
      .trim()
      .split(/\s+/);
    expect(packages).to.have.members(/^BASE_PACKAGES=([\w.,+-]+)$/m.exec(script)![1]!.split(','));
    // Node as the script's layer has it: the build stage's stage-app.sh runtime (the lockfile's node-linux-<arch>).
    expect(text).to.include('bash scripts/stage-app.sh runtime /stage/runtime');
    expect(all('COPY')).to.include('--from=build /stage/runtime/usr/local /usr/local');
    const user = readFileSync(path.join(rootfs, 'etc/passwd'), 'utf8')
      .split('\n')
      .find((line) => line.startsWith('portico:'))!;
    expect(runtime).to.include(user).and.include('install -d -m 0750 -o 10001 -g 10001 /data');
  });

  it('gives the same digest, and the same docker-archive, when built again', async function () {
    this.timeout(IMAGE_BUILD_TIMEOUT_MS);
    const archive = await sha256(image.archive);
    const again = await buildImage();
    expect(again.digest).to.equal(image.digest);
    expect(await sha256(again.archive)).to.equal(archive);
  });

  describe('the API from the image, under runc', () => {
    let api: TestApi;
    let data: string;
    let container: Container | undefined;

    before(async () => {
      // /data as a volume the published catalog's objects are in (the chart's is an emptyDir, or S3).
      data = await mkdtemp(path.join(tmpdir(), 'portico-image-data-'));
      await chown(data, 10001, 10001);
      api = await TestApi.start({ redis: true, env: { PORTICO_OBJECT_STORAGE: `file://${data}/objects` } });
      await publishTo(api, realSources());
    });

    after(async () => {
      await container?.remove();
      await api?.close();
      if (data) await rm(data, { recursive: true, force: true });
    });

    it('serves /healthz, /readyz and the catalog as user 10001, and stops on SIGTERM within the shutdown timeout', async () => {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const shutdownTimeoutMs = 5000;
      container = await runContainer(image, {
        data,
        env: {
          PORT: String(port),
          MONGODB_URI: api.config.mongodbUri!,
          REDIS_URL: testRedisUrl(),
          PORTICO_CURSOR_SECRET: 'image-test-cursor-secret-0123456789abcdef',
          PUBLIC_BASE_URL: base,
          PORTICO_OBJECT_STORAGE: 'file:///data/objects',
          PORTICO_CATALOG: catalogKey(api.config.catalog),
          PORTICO_SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs),
        },
      });
      const started = container;
      const logs = () => `container output:\n${started.logs().slice(-4000)}`;
      await untilServing(started, `${base}/healthz`, 30_000);
      await untilServing(started, `${base}/readyz`, 20_000);
      const ready = (await (await fetch(`${base}/readyz`)).json()) as { checks: Record<string, boolean> };
      expect(ready.checks).to.deep.include({ mongodb: true, redis: true, catalog: true });

      const search = (await (await fetch(`${base}/api/sdk/v1/catalog/brands?q=larkmoor%20gen`)).json()) as {
        brands: { name: string }[];
      };
      expect(search.brands[0]).to.include({ name: 'Larkmoor General Hospital' });
      expect(search).to.deep.equal((await api.request('GET', '/api/sdk/v1/catalog/brands?q=larkmoor%20gen')).body); // the same answer as the API in this process
      // A logo comes from the objects under /data: the mount is read through.
      const withLogo = (await (await fetch(`${base}/api/sdk/v1/catalog/brands?q=examplelabs`)).json()) as {
        brands: { logoUrl: string }[];
      };
      const logo = await fetch(withLogo.brands[0]!.logoUrl);
      expect([logo.status, logo.headers.get('content-type')]).to.deep.equal([200, 'image/png']);
      expect(withLogo.brands[0]!.logoUrl.startsWith(base)).to.equal(true);

      const uids = (await readFile(`/proc/${await started.pid()}/status`, 'utf8'))
        .match(/^Uid:\s+(.*)$/m)![1]!
        .split(/\s+/);
      expect(uids).to.deep.equal(['10001', '10001', '10001', '10001']);

      // Within the termination grace (the chart's is longer than the shutdown timeout plus this margin): past
      // it the race answers "still running" and the test fails; no finer timing is asserted.
      await started.kill('TERM');
      const code = await Promise.race([
        started.exited,
        new Promise<string>((resolve) => setTimeout(() => resolve('still running'), shutdownTimeoutMs + 5000)),
      ]);
      expect(code, logs()).to.equal(0);
      expect(started.logs()).to.include('"msg":"stopped"');
    });
  });
});
