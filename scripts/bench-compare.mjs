#!/usr/bin/env node
// `npm run bench:compare -- <git ref> [runs]`: the HTTP benchmark (`node dist/bench/run.js`) of the work tree against
// the commit `ref`, the two builds run alternately on this machine (ref, work tree, ref, work tree…; `runs` each,
// default 3), so that what the machine does meanwhile falls on both alike. Prints, for every HTTP target, the ratio to
// raw node:http and the server's CPU µs a request of each build (ranges over the runs) and the change of their
// medians. The commit is checked out beside the work tree in .bench/<sha> (git-ignored) and built there once; its
// node_modules is this tree's when the lockfiles agree, else installed there. Extra environment (BENCH_ROUNDS,
// BENCH_SECONDS, BENCH_ONLY…) goes to both. docs/benchmarks.md, "Comparing two builds".
import '../bin/check-node.js'; // both builds run on this Node: on an older one it stops
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [ref, runsArg] = process.argv.slice(2);
if (!ref) {
  console.error('usage: npm run bench:compare -- <git ref> [runs]');
  process.exit(2);
}
const runs = Number(runsArg ?? 3);
const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
const sha = git('rev-parse', '--verify', `${ref}^{commit}`);
const base = path.join(root, '.bench', sha.slice(0, 12));

function sh(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, stdio: 'inherit', env: process.env });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed in ${cwd}`);
}

if (!existsSync(path.join(base, 'dist', 'bench', 'run.js'))) {
  mkdirSync(path.dirname(base), { recursive: true });
  if (!existsSync(base)) git('worktree', 'add', '--detach', base, sha);
  const lock = (dir) => readFileSync(path.join(dir, 'package-lock.json'), 'utf8');
  if (!existsSync(path.join(base, 'node_modules'))) {
    if (lock(base) === lock(root)) symlinkSync(path.join(root, 'node_modules'), path.join(base, 'node_modules'), 'dir');
    else sh('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], base);
  }
  console.error(`bench:compare: building ${sha.slice(0, 12)} in ${path.relative(root, base)}`);
  sh('npx', ['tsc', '-p', 'tsconfig.json'], base);
}
console.error('bench:compare: building the work tree');
// From scratch: an incremental build leaves alone the output of a source that did not change, so a file edited in dist/
// by hand (an experiment) would be measured as the work tree.
rmSync(path.join(root, 'dist'), { recursive: true, force: true });
sh('npm', ['run', 'build', '--silent'], root);

/** The HTTP targets of one run's output: target → {ratio, cpu}. */
function targetsOf(output) {
  const targets = new Map();
  for (const line of output.split('\n')) {
    const cells = line.split('│').map((cell) => cell.trim());
    // │ (index) │ target │ req/s │ ratio │ CPU µs/req │ …
    if (cells.length < 7 || !/^\d+$/.test(cells[1] ?? '')) continue;
    const name = cells[2].replace(/^['"]|['"]$/g, '');
    const ratio = Number(cells[4].replace(/'/g, ''));
    const cpu = Number(cells[5]);
    if (Number.isFinite(ratio) && Number.isFinite(cpu) && /^\d+$/.test(cells[3])) targets.set(name, { ratio, cpu });
  }
  return targets;
}

const results = { base: [], work: [] };
const loads = [loadavg()[0]];
for (let run = 1; run <= runs; run++) {
  for (const [side, dir] of [
    ['base', base],
    ['work', root],
  ]) {
    console.error(`bench:compare: run ${run} of ${runs}, ${side === 'base' ? sha.slice(0, 12) : 'the work tree'}`);
    const result = spawnSync(process.execPath, ['--enable-source-maps', 'dist/bench/run.js'], {
      cwd: dir,
      env: process.env,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    if (result.status !== 0) throw new Error(`the benchmark failed in ${dir}:\n${result.stderr}`);
    results[side].push(targetsOf(result.stdout));
    loads.push(loadavg()[0]);
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length % 2
    ? sorted[(sorted.length - 1) / 2]
    : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
};
const range = (values, digits) => {
  const [low, high] = [Math.min(...values), Math.max(...values)];
  return low === high ? low.toFixed(digits) : `${low.toFixed(digits)}–${high.toFixed(digits)}`;
};
const change = (before, after) => `${after >= before ? '+' : ''}${(((after - before) / before) * 100).toFixed(0)} %`;
const names = [...new Set(results.work.flatMap((targets) => [...targets.keys()]))];
console.log(
  `\nHTTP benchmark, ${sha.slice(0, 12)} (${ref}) against the work tree (${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain') ? ' and uncommitted changes' : ''}), ${runs} runs each, alternately; load average ${range(loads, 1)}\n`,
);
console.log('| target | ratio, before | ratio, now | change | CPU µs, before | CPU µs, now | change |');
console.log('|---|---|---|---|---|---|---|');
for (const name of names) {
  const of = (side, field) => results[side].map((targets) => targets.get(name)?.[field]).filter((v) => v !== undefined);
  const [rb, rw, cb, cw] = [of('base', 'ratio'), of('work', 'ratio'), of('base', 'cpu'), of('work', 'cpu')];
  if (rw.length === 0) continue;
  const before = rb.length > 0;
  console.log(
    `| ${name} | ${before ? range(rb, 2) : '—'} | ${range(rw, 2)} | ${before ? change(median(rb), median(rw)) : 'new'} | ${before ? range(cb, 0) : '—'} | ${range(cw, 0)} | ${before ? change(median(cb), median(cw)) : 'new'} |`,
  );
}
