// The layering the code relies on (docs/architecture.md, "Layers and where code goes"). Each rule lists every
// import that breaks it, so a failure names the file to change.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { repoRoot } from '#core/infra/repo-root.js';

const root = repoRoot();
const PROGRAMS = ['core', 'api', 'operator', 'sandbox'] as const;
type Program = (typeof PROGRAMS)[number];
const ALLOWED: Record<Program, Program[]> = {
  core: ['core'],
  api: ['core', 'api'],
  operator: ['core', 'operator'],
  // The sandbox EHR stands in for a health system: it shares core's utilities but none of Portico's own code.
  sandbox: ['core', 'sandbox'],
};

function sources(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return /\.(ts|js|cjs|mjs)$/.test(entry.name) ? [full] : [];
  });
}

/**
 * Every module of the repository a file imports or re-exports (types included, dynamic imports too): relative ones,
 * and core's through the package's `#core/` imports (package.json), as repository paths (a `.js` specifier names the
 * `.ts` file beside it when there is one). Any quote style; a template literal only without substitutions
 * (computedImports() refuses the others, which no rule could follow).
 */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const pattern = /(?:\bfrom|\bimport|\brequire)\s*\(?\s*(['"`])(\.{1,2}\/[^'"`$]+|#core\/[^'"`$]+)\1/g;
  return [...text.matchAll(pattern)].map((m) => {
    const specifier = m[2]!;
    const target = specifier.startsWith('#core/')
      ? path.join('core', 'src', specifier.slice('#core/'.length))
      : path.join(path.dirname(file), specifier);
    const asTs = target.replace(/\.js$/, '.ts');
    return existsSync(path.join(root, asTs)) ? asTs : target;
  });
}

/** Dynamic imports whose specifier is computed (a variable, a template with substitutions). */
function computedImports(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  return [...text.matchAll(/\bimport\(\s*(?!['"][^'"]*['"]\s*\)|`[^`$]*`\s*\))([^)]*)\)/g)].map(
    (m) => `${file}: import(${m[1]!})`,
  );
}

interface Edge {
  from: string;
  to: string;
}

function edgesOf(files: string[]): Edge[] {
  return files.flatMap((from) => importsOf(from).map((to) => ({ from, to })));
}

const show = ({ from, to }: Edge) => `${from} → ${to}`;

/** Strongly connected components of more than one file, or a file importing itself: the import cycles. */
function cycles(edges: Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (next.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of next.keys()) if (!index.has(node)) visit(node);
  return found;
}

// The API's parts. A feature (api/src/features/<name>/) owns its store, fake, service and routes; the shared layer
// (api/src/shared/ and config.ts) is what every feature uses; a surface (api/src/surfaces/) mounts the features'
// routers under its prefix; the composition root (main.ts, app.ts, wiring.ts, openapi-notes.ts, cli/) builds
// and starts it all.
type ApiPart =
  { kind: 'shared' } | { kind: 'feature'; name: string } | { kind: 'surface' } | { kind: 'root' } | { kind: 'other' };

function apiPart(file: string): ApiPart {
  const rest = path.relative('api/src', file).split(path.sep);
  if (rest[0] === 'shared' || file === path.join('api', 'src', 'config.ts')) return { kind: 'shared' };
  if (rest[0] === 'features') return { kind: 'feature', name: rest[1]! };
  if (rest[0] === 'surfaces') return { kind: 'surface' };
  if (rest[0]?.startsWith('..')) return { kind: 'other' };
  return { kind: 'root' };
}

/** A feature's index.ts, at the top of its folder: what other features may import of it. */
function isFeatureIndex(file: string): boolean {
  const rest = path.relative(path.join('api', 'src', 'features'), file).split(path.sep);
  return rest.length === 2 && rest[1] === 'index.ts';
}

/** A feature's public face to the surfaces: its index.ts and its routes modules, at the top of its folder. */
function isPublicFace(file: string): boolean {
  const rest = path.relative(path.join('api', 'src', 'features'), file).split(path.sep);
  return rest.length === 2 && (rest[1] === 'index.ts' || rest[1]!.endsWith('.routes.ts'));
}

// The operator's layers, lowest first: a folder imports only its own and lower layers; the files at the top of
// operator/src (main.ts, cli.ts, the HTTP server, readiness) start it and may import any.
const OPERATOR_LAYERS = ['shared', 'crd', 'pipeline', 'health', 'controller'];

/**
 * Where the API is put together: the composition root's wiring and start-up, the infrastructure every builder is
 * given, and each feature's builder (features/<name>/create.ts). (app.ts, which composes the HTTP handler from
 * route tables whose entries are handlers, is not among them.)
 */
function compositionFiles(): string[] {
  const features = path.join('api', 'src', 'features');
  return [
    path.join('api', 'src', 'wiring.ts'),
    path.join('api', 'src', 'start-up.ts'),
    path.join('api', 'src', 'shared', 'infra', 'infrastructure.ts'),
    ...readdirSync(path.join(root, features))
      .map((name) => path.join(features, name, 'create.ts'))
      .filter((file) => existsSync(path.join(root, file))),
  ];
}

/**
 * What hides a dependency from the import graph in a composition file: a part changed after it was built (an
 * assignment to a property: `revocations.forget = …`), and a function written there and handed to a part, as it is
 * built or after (an argument of any call, or inside an object or array given as one: a thunk `users: () => users`,
 * a hook `onRevoked: …`, a listener `store.onCommit(…)`, a callback `new Repository(db, (error) => …)`). A part is
 * given what it needs as an object with an interface it names, built before it.
 */
function hiddenWiring(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const faults: string[] = [];
  const at = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const isFunction = (node: ts.Node) => ts.isArrowFunction(node) || ts.isFunctionExpression(node);
  const functionsIn = (argument: ts.Node, callee: string): void => {
    if (isFunction(argument)) faults.push(`${at(argument)}: a function handed to ${callee}`);
    else if (ts.isObjectLiteralExpression(argument))
      for (const property of argument.properties) {
        if (ts.isMethodDeclaration(property))
          faults.push(`${at(property)}: a function handed to ${callee} (${property.name.getText()})`);
        else if (ts.isPropertyAssignment(property)) functionsIn(property.initializer, callee);
      }
    else if (ts.isArrayLiteralExpression(argument))
      for (const element of argument.elements) functionsIn(element, callee);
  };
  const visit = (node: ts.Node): void => {
    if (
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
      node.operatorToken.kind <= ts.SyntaxKind.LastAssignment &&
      (ts.isPropertyAccessExpression(node.left) || ts.isElementAccessExpression(node.left))
    )
      faults.push(`${at(node)}: ${node.left.getText()} changed after it was built`);
    if (ts.isNewExpression(node) || ts.isCallExpression(node)) {
      const callee = `${ts.isNewExpression(node) ? 'new ' : ''}${node.expression.getText()}`;
      for (const argument of node.arguments ?? []) functionsIn(argument, callee);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return faults;
}

describe('architecture', () => {
  const apiEdges = edgesOf(sources('api/src'));

  for (const program of PROGRAMS) {
    it(`${program}/src imports only ${ALLOWED[program].join(' and ')}`, () => {
      const wrong = edgesOf(sources(`${program}/src`)).filter(
        ({ to }) => !ALLOWED[program].includes(to.split(path.sep)[0] as Program),
      );
      expect(wrong.map(show)).to.deep.equal([]);
    });
  }

  it('the API’s shared layer imports no feature, surface or composition root', () => {
    const wrong = apiEdges.filter(
      ({ from, to }) => apiPart(from).kind === 'shared' && !['shared', 'other'].includes(apiPart(to).kind),
    );
    expect(wrong.map(show)).to.deep.equal([]);
  });

  it('a feature imports no surface and no composition root', () => {
    const wrong = apiEdges.filter(
      ({ from, to }) => apiPart(from).kind === 'feature' && ['surface', 'root'].includes(apiPart(to).kind),
    );
    expect(wrong.map(show)).to.deep.equal([]);
  });

  it('a feature reaches another only through its index.ts', () => {
    const wrong = apiEdges.filter(({ from, to }) => {
      const [a, b] = [apiPart(from), apiPart(to)];
      return a.kind === 'feature' && b.kind === 'feature' && a.name !== b.name && !isFeatureIndex(to);
    });
    expect(wrong.map(show)).to.deep.equal([]);
  });

  it('a surface imports only features’ routers and public faces, and the shared layer', () => {
    const wrong = apiEdges.filter(({ from, to }) => {
      if (apiPart(from).kind !== 'surface') return false;
      const target = apiPart(to);
      return target.kind === 'root' || (target.kind === 'feature' && !isPublicFace(to));
    });
    expect(wrong.map(show)).to.deep.equal([]);
  });

  it('the operator’s folders import only their own and lower layers', () => {
    const layerOf = (file: string) => OPERATOR_LAYERS.indexOf(path.relative('operator/src', file).split(path.sep)[0]!);
    const wrong = edgesOf(sources('operator/src')).filter(({ from, to }) => {
      const [a, b] = [layerOf(from), layerOf(to)];
      return to.startsWith(`operator${path.sep}`) && a >= 0 && (b < 0 || b > a);
    });
    expect(wrong.map(show)).to.deep.equal([]);
  });

  it('every operator folder has its place among the layers', () => {
    const folders = readdirSync(path.join(root, 'operator/src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => !OPERATOR_LAYERS.includes(folder))).to.deep.equal([]);
  });

  it('code outside core reaches core through #core/, not a relative path up the tree', () => {
    const outside = ['api/src', 'operator/src', 'sandbox/src', 'testkit', 'test', 'bench'];
    const wrong = outside.flatMap((dir) =>
      sources(dir).flatMap((file) =>
        [...readFileSync(path.join(root, file), 'utf8').matchAll(/(['"`])((?:\.\.\/)+core\/src\/[^'"`]*)\1/g)].map(
          (m) => `${file}: ${m[2]!}`,
        ),
      ),
    );
    expect(wrong).to.deep.equal([]);
  });

  it('no dynamic import with a computed specifier (no rule here could follow it)', () => {
    expect(PROGRAMS.flatMap((program) => sources(`${program}/src`).flatMap(computedImports))).to.deep.equal([]);
  });

  it('no import cycles in core, api, operator, sandbox or testkit (type-only imports included)', () => {
    const edges = [
      ...PROGRAMS.flatMap((program) => edgesOf(sources(`${program}/src`))),
      ...edgesOf(sources('testkit')),
    ];
    expect(cycles(edges)).to.deep.equal([]);
  });

  it('tests and benchmarks do not import each other (what both need is in testkit/)', () => {
    const wrong = [
      ...edgesOf(sources('test')).filter(({ to }) => to.startsWith(`bench${path.sep}`)),
      ...edgesOf(sources('bench')).filter(({ to }) => to.startsWith(`test${path.sep}`)),
      ...edgesOf(sources('testkit')).filter(
        ({ to }) => to.startsWith(`test${path.sep}`) || to.startsWith(`bench${path.sep}`),
      ),
    ];
    expect(wrong.map(show)).to.deep.equal([]);
  });

  it('the test tree mirrors the source tree', () => {
    const folders = (dir: string): string[] =>
      readdirSync(path.join(root, dir), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .flatMap((entry) => [path.join(dir, entry.name), ...folders(path.join(dir, entry.name))]);
    const stray = PROGRAMS.flatMap((program) =>
      folders(`test/${program}`).filter(
        (folder) =>
          !folders(`${program}/src`).includes(path.join(program, 'src', path.relative(`test/${program}`, folder))),
      ),
    );
    expect(stray).to.deep.equal([]);
  });

  it('the composition files hand no part a function, and change none after building it', () => {
    expect(compositionFiles().flatMap(hiddenWiring)).to.deep.equal([]);
  });

  it("reads process.env only in each program's config module", () => {
    const readers = PROGRAMS.flatMap((program) => sources(`${program}/src`))
      .filter((file) => /process\.env\b/.test(readFileSync(path.join(root, file), 'utf8').replace(/\/\/.*$/gm, '')))
      .sort();
    expect(readers).to.deep.equal(['api/src/config.ts', 'operator/src/config.ts', 'sandbox/src/config.ts']);
  });
});
