// A real browser for the tests: Debian's Chromium (installed by scripts/ensure-tools.sh), driven by playwright-core,
// which downloads nothing. One browser per test file and a fresh context (cookies, storage) per test; axe-core for
// the accessibility check, injected in a way the pages' strict Content-Security-Policy does not block; screenshots
// for docs/images; and a loopback server for pages a test writes itself (and the app backend's few answers).
import { accessSync, constants as fs } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { AxeResults, Result as AxeResult, RunOptions as AxeRunOptions } from 'axe-core';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { repoRoot } from '#core/infra/repo-root.js';

export type { AxeResult };

const DEBIAN_CHROMIUM = '/usr/bin/chromium';
const LAUNCH_TIMEOUT_MS = 20_000;

/** The Chromium the tests drive: PORTICO_CHROMIUM, or Debian's package. Throws, naming the fix, when it is missing. */
export function chromiumPath(): string {
  const executable = process.env.PORTICO_CHROMIUM || DEBIAN_CHROMIUM;
  try {
    accessSync(executable, fs.X_OK);
  } catch {
    const from = process.env.PORTICO_CHROMIUM ? 'PORTICO_CHROMIUM' : "Debian's chromium package";
    throw new Error(
      `no Chromium at ${executable} (${from}): run scripts/ensure-tools.sh, which installs Debian's chromium package, or set PORTICO_CHROMIUM to a Chromium binary`,
    );
  }
  return executable;
}

/**
 * Starts a headless Chromium for a CI container: without the sandbox when running as root (Chromium refuses to
 * start as root with it), /dev/shm left alone (a container's is often 64 MB), no GPU. Only loopback
 * resolves (localhost, 127.0.0.1, [::1]; any other name or address fails as ERR_NAME_NOT_RESOLVED), so a page
 * under test cannot reach the network; a test that needs a name passes its own --host-resolver-rules in `args`,
 * which replaces this one.
 */
export async function launchBrowser(options: { args?: string[] } = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    chromiumSandbox: process.getuid?.() !== 0,
    timeout: LAUNCH_TIMEOUT_MS,
    args: [
      '--disable-dev-shm-usage',
      '--disable-gpu',
      '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1 , EXCLUDE [::1]',
      ...(options.args ?? []),
    ],
  });
}

export interface BrowserSession {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** The page's console messages and uncaught errors so far, as `type: text` (CSP refusals among them). */
  messages: string[];
}

/**
 * Registers one browser for the enclosing describe block (launched before its tests, closed after them even when
 * they fail) and a fresh context and page for each test: `withBrowser((session) => ({ page } = session))`.
 */
export function withBrowser(
  assign: (session: BrowserSession) => void,
  options: { contextOptions?: BrowserContextOptions; args?: string[] } = {},
): void {
  let browser: Browser | undefined;
  let context: BrowserContext | undefined;
  before(async () => {
    browser = await launchBrowser({ args: options.args ?? [] });
  });
  beforeEach(async () => {
    if (!browser) throw new Error('the browser did not start (see the before all hook)');
    context = await browser.newContext(options.contextOptions);
    const page = await context.newPage();
    const messages: string[] = [];
    page.on('console', (message) => messages.push(`${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => messages.push(`pageerror: ${error.message}`));
    assign({ browser, context, page, messages });
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });
  after(async () => {
    await browser?.close();
    browser = undefined;
  });
}

let axeSource: Promise<string> | undefined;

function loadAxeSource(): Promise<string> {
  const entry = createRequire(import.meta.url).resolve('axe-core');
  return (axeSource ??= readFile(path.join(path.dirname(entry), 'axe.min.js'), 'utf8'));
}

/**
 * Runs axe-core over the page's document and returns its violations (every rule axe runs by default, or as
 * `options` says). axe is evaluated through the DevTools protocol (page.evaluate), as the debugger would: a
 * `<script>` tag would be refused by the strict Content-Security-Policy of the pages under test.
 */
export async function runAxe(page: Page, options: AxeRunOptions = {}): Promise<AxeResult[]> {
  const loaded = await page.evaluate(() => 'axe' in globalThis);
  if (!loaded) await page.evaluate(await loadAxeSource());
  const results = await page.evaluate(
    // axe and document are the page's globals (this build has no DOM library: globalThis is the page's window).
    (runOptions) => (globalThis as any).axe.run((globalThis as any).document, runOptions) as Promise<AxeResults>,
    options,
  );
  return results.violations;
}

/**
 * Runs every rule axe-core has, best practices and experimental rules included (those it leaves out by default, such
 * as the enhanced contrast of WCAG AAA): for a page that should meet all of them.
 */
export async function runEveryAxeRule(page: Page): Promise<AxeResult[]> {
  const loaded = await page.evaluate(() => 'axe' in globalThis);
  if (!loaded) await page.evaluate(await loadAxeSource());
  const { rules, ran, violations } = await page.evaluate(async () => {
    const axe = (globalThis as any).axe;
    const ids = (axe.getRules() as { ruleId: string }[]).map((rule) => rule.ruleId);
    const results = (await axe.run((globalThis as any).document, {
      runOnly: { type: 'rule', values: ids },
      rules: Object.fromEntries(ids.map((id) => [id, { enabled: true }])),
    })) as AxeResults;
    const outcomes = [...results.passes, ...results.violations, ...results.incomplete, ...results.inapplicable];
    return {
      rules: ids.length,
      ran: new Set(outcomes.map((result) => result.id)).size,
      violations: results.violations,
    };
  });
  // A rule axe left out would pass unseen.
  if (ran !== rules) throw new Error(`axe ran ${ran} of its ${rules} rules`);
  return violations;
}

/** Every axe rule on the page, its count printed for the closing note; throws on any violation, whatever its impact. */
export async function expectEveryAxeRuleClean(page: Page, what: string): Promise<void> {
  const violations = await runEveryAxeRule(page);
  console.log(`      axe (every rule) on ${what}: ${violations.length} violation(s) ${formatViolations(violations)}`);
  if (violations.length > 0) throw new Error(`axe on ${what}: ${formatViolations(violations)}`);
}

/** The origins a page requests from now on, in the order of their first request (kept up to date). */
export function originsOf(page: Page): string[] {
  const origins: string[] = [];
  page.on('request', (request) => {
    const origin = new URL(request.url()).origin;
    if (!origins.includes(origin)) origins.push(origin);
  });
  return origins;
}

/** What a page's Content Security Policy refused, from its console messages (BrowserSession.messages). */
export const cspRefusals = (messages: readonly string[]): string[] =>
  messages.filter((message) => /Content Security Policy/i.test(message));

const BLOCKING_IMPACTS = new Set(['serious', 'critical']);

/** The violations whose impact is serious or critical: what the accessibility goal allows none of. */
export function blockingViolations(violations: AxeResult[]): AxeResult[] {
  return violations.filter((violation) => BLOCKING_IMPACTS.has(violation.impact ?? ''));
}

/** One line per violation (id, impact, help) and one per element it names, for an assertion's message. */
export function formatViolations(violations: AxeResult[]): string {
  if (violations.length === 0) return 'no accessibility violations';
  return violations
    .map((violation) =>
      [
        `${violation.id} (${violation.impact ?? 'no impact'}): ${violation.help}`,
        ...violation.nodes.map((node) => `  at ${node.target.map((part) => JSON.stringify(part)).join(' ')}`),
      ].join('\n'),
    )
    .join('\n');
}

/**
 * Saves a PNG of the page: a bare name goes into the repository's docs/images/ (created then), an absolute path
 * where it says. Returns the file's path.
 */
export async function screenshot(page: Page, file: string, options: { fullPage?: boolean } = {}): Promise<string> {
  const target = path.resolve(repoRoot(), 'docs', 'images', file);
  await mkdir(path.dirname(target), { recursive: true });
  await page.screenshot({ path: target, type: 'png', fullPage: options.fullPage ?? false });
  return target;
}

export interface StaticFile {
  /**
   * The content, or a function that makes it for each request: what an app's backend answers (a link token minted
   * for the page, say), which a page may also POST to.
   */
  body: string | Buffer | (() => Promise<string | Buffer>);
  /** The content type; by default from the path's extension. */
  type?: string;
  headers?: Record<string, string>;
}

export interface StaticServer {
  /** http://127.0.0.1:port, no trailing slash. */
  origin: string;
  /** Every request so far, as `METHOD /path` with its headers. */
  requests: { line: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/**
 * Serves the given files on a free loopback port (`{ '/': { body }, '/app.js': { body } }`), each with `headers`
 * plus its own; anything else is a 404. A path without an extension is HTML. Nothing is cached: `no-store`. A
 * body that is a function answers GET and POST with what it resolves to (a 500 when it throws).
 */
export async function serveStatic(
  files: Record<string, StaticFile>,
  headers: Record<string, string> = {},
): Promise<StaticServer> {
  const requests: StaticServer['requests'] = [];
  const server = createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    requests.push({ line: `${req.method} ${pathname}`, headers: req.headers });
    const file = files[pathname];
    const dynamic = typeof file?.body === 'function';
    if (!file || !(req.method === 'GET' || req.method === 'HEAD' || (dynamic && req.method === 'POST'))) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const type = file.type ?? TYPES[path.extname(pathname) || '.html'] ?? 'application/octet-stream';
    const send = (body: string | Buffer) => {
      res.writeHead(200, { ...headers, 'content-type': type, 'cache-control': 'no-store', ...file.headers });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (typeof file.body !== 'function') return send(file.body);
    file.body().then(send, (error: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
