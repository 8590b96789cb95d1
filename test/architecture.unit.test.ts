// The layering the code relies on: the API and the operator share core/ and never import each other, core
// imports neither, and each program reads the environment in its config module alone.
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../core/src/infra/repo-root.js';

const root = repoRoot();
const PROGRAMS = ['core', 'api', 'operator'] as const;
type Program = (typeof PROGRAMS)[number];
const ALLOWED: Record<Program, Program[]> = { core: ['core'], api: ['core', 'api'], operator: ['core', 'operator'] };

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? sources(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Every relative module a file imports or re-exports, resolved to a repository path. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specifiers.map((s) => path.relative(root, path.resolve(path.dirname(file), s)));
}

describe('architecture', () => {
  for (const program of PROGRAMS) {
    it(`${program}/src imports only ${ALLOWED[program].join(' and ')}`, () => {
      const wrong: string[] = [];
      for (const file of sources(path.join(root, program, 'src'))) {
        for (const target of importsOf(file)) {
          const owner = target.split(path.sep)[0] as Program;
          if (!ALLOWED[program].includes(owner)) wrong.push(`${path.relative(root, file)} → ${target}`);
        }
      }
      expect(wrong).to.deep.equal([]);
    });
  }

  it('reads process.env only in each program\'s config module', () => {
    const readers = PROGRAMS.flatMap((program) => sources(path.join(root, program, 'src')))
      .filter((file) => /process\.env\b/.test(readFileSync(file, 'utf8').replace(/\/\/.*$/gm, '')))
      .map((file) => path.relative(root, file))
      .sort();
    expect(readers).to.deep.equal(['api/src/config.ts', 'operator/src/config.ts']);
  });
});
