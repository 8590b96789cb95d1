// The per-machine tool cache: the scripts (scripts/lib/tool-cache.sh) and the TypeScript side
// (core/src/infra/tool-cache.ts, go-tool.ts) must find the same entries, and an entry must appear whole and be
// built once when two processes, of either side, want it at the same time.
import { expect } from 'chai';
import { until } from '../../../testkit/until.js';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { goBuiltFrom } from '#core/infra/go-tool.js';
import { repoRoot } from '#core/infra/repo-root.js';
import { toolCacheDir, type CacheEnvironment } from '#core/config.js';
import { cacheKey, ensureCacheEntry } from '#core/infra/tool-cache.js';

const run = promisify(execFile);
const LIBRARY = path.join(repoRoot(), 'scripts', 'lib', 'tool-cache.sh');

/** Runs `script` in bash with the library sourced, in this process' environment or in `env` (plus PATH) alone. */
async function bash(script: string, env?: Record<string, string>): Promise<string> {
  const environment = env ? { PATH: process.env.PATH!, HOME: '/home/someone', ...env } : process.env;
  const { stdout } = await run('bash', ['-c', `set -euo pipefail; source "${LIBRARY}"; ${script}`], {
    env: environment,
  });
  return stdout;
}

describe('tool cache', () => {
  it('is placed alike by the scripts and by TypeScript: PORTICO_CACHE_DIR, else XDG_CACHE_HOME/portico, else ~/.cache/portico', async () => {
    const cases: [CacheEnvironment, string][] = [
      [{}, '/home/someone/.cache/portico'],
      [{ XDG_CACHE_HOME: '' }, '/home/someone/.cache/portico'],
      [{ XDG_CACHE_HOME: '/var/cache/me' }, '/var/cache/me/portico'],
      [{ XDG_CACHE_HOME: '/var/cache/me', PORTICO_CACHE_DIR: '/srv/tools' }, '/srv/tools'],
      [{ PORTICO_CACHE_DIR: 'relative/tools' }, path.join(process.cwd(), 'relative/tools')],
    ];
    for (const [env, expected] of cases) {
      const variables = Object.fromEntries(
        Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
      );
      expect(toolCacheDir({ HOME: '/home/someone', ...env }), JSON.stringify(env)).to.equal(expected);
      expect(await bash('tool_cache_dir', variables), JSON.stringify(env)).to.equal(expected);
    }
  });

  it('keys the Go programs under tools/ alike in the scripts and in TypeScript', async function () {
    this.timeout(60_000);
    const tools = (await readdir(path.join(repoRoot(), 'tools'), { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(tools).to.include.members(['devdb', 'kube-apiserver', 'kubectl', 's3d']);
    for (const tool of tools) {
      const source = path.join(repoRoot(), 'tools', tool);
      const ours = await goBuiltFrom(source);
      expect(await bash(`go_built_from "${source}"`), tool).to.equal(ours);
      expect((await bash(`go_built_from "${source}" | tool_cache_key`)).trim(), tool).to.equal(cacheKey(ours));
      expect(ours, tool)
        .to.match(/^go build -trimpath\ngo\d/)
        .and.include('  go.sum\n');
    }
  });

  describe('an entry', () => {
    let cache: string;
    beforeEach(async () => {
      cache = await mkdtemp(path.join(tmpdir(), 'portico-tool-cache-'));
    });
    afterEach(async () => {
      await rm(cache, { recursive: true, force: true });
    });

    it('is built once when the scripts and TypeScript ask for it at the same time, and appears whole', async function () {
      this.timeout(30_000);
      const entry = path.join(cache, 'tool', 'key');
      const builds = path.join(cache, 'builds');
      // The script's build takes a second; TypeScript asks while it runs and must wait for it, not build again.
      const script = spawn(
        'bash',
        [
          '-c',
          `set -euo pipefail; source "${LIBRARY}"; slow() { echo script >>"${builds}"; sleep 1; echo built >"$1/program"; }; tool_cache_build "${entry}" program slow`,
        ],
        { stdio: 'inherit' },
      );
      const scriptDone = new Promise<number | null>((resolve) => script.once('exit', resolve));
      await until('the script’s build to start', () => existsSync(builds), { intervalMs: 20 });
      expect(existsSync(entry), 'the entry while it is being built').to.equal(false);
      const program = await ensureCacheEntry(entry, 'program', async (temporary) => {
        await writeFile(builds, 'typescript\n', { flag: 'a' });
        await writeFile(path.join(temporary, 'program'), 'built twice\n');
      });
      expect(await scriptDone).to.equal(0);
      expect(program).to.equal(path.join(entry, 'program'));
      expect(await readFile(program, 'utf8')).to.equal('built\n');
      expect(await readFile(builds, 'utf8')).to.equal('script\n');
      expect((await readdir(path.dirname(entry))).sort()).to.deep.equal(['key', 'key.lock']);
    });

    it('is not left behind, half or whole, by a build that fails, and the next build removes older leftovers', async () => {
      const entry = path.join(cache, 'tool', 'key');
      await mkdir(`${entry}.tmp.1`, { recursive: true }); // as a build killed half-way leaves it
      const failure = await ensureCacheEntry(entry, 'program', async (temporary) => {
        await writeFile(path.join(temporary, 'program'), 'half');
        throw new Error('the build failed');
      }).catch((error: Error) => error);
      expect(String(failure)).to.include('the build failed');
      expect((await readdir(path.dirname(entry))).sort()).to.deep.equal(['key.lock']);
      await ensureCacheEntry(entry, 'program', async (temporary) =>
        writeFile(path.join(temporary, 'program'), 'whole'),
      );
      expect(await readFile(path.join(entry, 'program'), 'utf8')).to.equal('whole');
      expect(await bash(`tool_cache_build "${entry}" program false; cat "${entry}/program"`)).to.equal('whole');
    });
  });
});
