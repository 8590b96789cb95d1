// The browser under the tests (testkit/browser.ts): Debian's Chromium starts, obeys a strict Content-Security-Policy
// as the hosted pages will send it, and the checks the page tests rely on (axe-core under that policy, the 360 px
// width, screenshots) can both pass and fail.
import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import {
  blockingViolations,
  formatViolations,
  launchBrowser,
  runAxe,
  screenshot,
  serveStatic,
  withBrowser,
  type StaticServer,
} from '../../testkit/browser.js';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'";

const page = (title: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="/page.css">
<script src="/page.js"></script>
</head>
<body>
<main>
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;

// Records the policy's refusals (before the inline script below is parsed) and adds the button once the document
// is parsed: proof that a script from 'self' runs.
const PAGE_JS = `window.cspViolations = [];
document.addEventListener('securitypolicyviolation', (event) => {
  window.cspViolations.push({ directive: event.effectiveDirective, blocked: event.blockedURI });
});
document.addEventListener('DOMContentLoaded', () => {
  const button = document.createElement('button');
  button.type = 'button';
  button.textContent = 'Continue';
  document.querySelector('main').append(button);
});
`;

const PAGE_CSS = `body { margin: 0; font-family: 'DejaVu Sans', sans-serif; color: #1a1a1a; background: #fff; }
main { padding: 1rem; max-width: 40rem; }
h1 { overflow-wrap: anywhere; }
button { font: inherit; padding: 0.5rem 1rem; }
.wide { width: 600px; height: 1rem; }
`;

// A 1×1 transparent PNG.
const PIXEL = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);

describe('browser: Chromium under the tests', () => {
  let server: StaticServer;
  let tab: Page;
  let messages: string[];
  withBrowser((session) => ({ page: tab, messages } = session));

  before(async () => {
    server = await serveStatic(
      {
        '/': {
          body: page(
            'Find your health system',
            `<p>Search the catalogue of health systems that share records with this app.</p>
<script>document.documentElement.dataset.inline = 'ran';</script>`,
          ),
        },
        '/broken': {
          body: page('A page with faults', '<img src="/pixel.png">\n<div class="wide"></div>'),
        },
        '/page.js': { body: PAGE_JS },
        '/page.css': { body: PAGE_CSS },
        '/pixel.png': { body: PIXEL },
      },
      { 'content-security-policy': CSP },
    );
  });
  after(() => server?.close());

  it("runs the page's own script and refuses its inline script", async () => {
    await tab.goto(`${server.origin}/`);
    await tab.getByRole('button', { name: 'Continue' }).waitFor();

    await tab.waitForFunction('window.cspViolations.length > 0');
    expect(await tab.evaluate('window.cspViolations')).to.deep.equal([
      { directive: 'script-src-elem', blocked: 'inline' },
    ]);
    expect(await tab.evaluate('document.documentElement.dataset.inline')).to.be.undefined;
    expect(messages.join('\n')).to.match(/Content Security Policy/);
    expect(server.requests.map((request) => request.line)).to.include.members(['GET /page.js', 'GET /page.css']);
  });

  it('runs axe-core under the policy: no serious or critical violations on a sound page', async () => {
    await tab.goto(`${server.origin}/`);
    await tab.getByRole('button', { name: 'Continue' }).waitFor();

    const violations = await runAxe(tab);
    expect(blockingViolations(violations), formatViolations(violations)).to.deep.equal([]);
  });

  it('runs axe-core under the policy: finds an image without a text alternative', async () => {
    await tab.goto(`${server.origin}/broken`);

    const violations = blockingViolations(await runAxe(tab));
    expect(violations.map((violation) => violation.id)).to.deep.equal(['image-alt']);
    expect(formatViolations(violations)).to.match(/^image-alt \(critical\): .+\n {2}at "img"$/);
  });

  it('tells a page that fits 360 px from one that does not', async () => {
    await tab.setViewportSize({ width: 360, height: 740 });
    const scrollWidth = () => tab.evaluate('document.documentElement.scrollWidth');

    await tab.goto(`${server.origin}/`);
    await tab.getByRole('button', { name: 'Continue' }).waitFor();
    expect(await scrollWidth()).to.be.at.most(360);

    await tab.goto(`${server.origin}/broken`);
    expect(await scrollWidth()).to.be.above(360);
  });

  it('takes a screenshot of the narrow page', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'portico-screenshot-'));
    try {
      await tab.setViewportSize({ width: 360, height: 740 });
      await tab.goto(`${server.origin}/`);
      await tab.getByRole('button', { name: 'Continue' }).waitFor();

      const file = await screenshot(tab, path.join(dir, 'smoke.png'));
      expect(file).to.equal(path.join(dir, 'smoke.png'));
      const png = await readFile(file);
      expect(png.subarray(1, 4).toString('latin1')).to.equal('PNG');
      // The IHDR chunk: width and height, in CSS pixels at a device scale factor of 1.
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).to.deep.equal([360, 740]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reaches loopback only', async () => {
    for (const url of ['http://example.com/', 'http://192.0.2.1/']) {
      const failure = await tab.goto(url).then(
        () => undefined,
        (error: Error) => error,
      );
      expect(failure?.message, url).to.match(/net::ERR_NAME_NOT_RESOLVED/);
    }
  });

  it('names scripts/ensure-tools.sh when Chromium is missing', async () => {
    const saved = process.env.PORTICO_CHROMIUM;
    process.env.PORTICO_CHROMIUM = path.join(os.tmpdir(), 'no-such-chromium');
    try {
      const failure = await launchBrowser().then(
        (browser) => browser.close().then(() => undefined),
        (error: Error) => error,
      );
      expect(failure?.message).to.match(/no Chromium at .*no-such-chromium.*run scripts\/ensure-tools\.sh/);
    } finally {
      if (saved === undefined) delete process.env.PORTICO_CHROMIUM;
      else process.env.PORTICO_CHROMIUM = saved;
    }
  });
});
