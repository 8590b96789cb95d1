// Portico Connect in a real browser (Debian's Chromium through playwright-core): an app page that gets a link token
// from its backend and calls the SDK's connect(), the hosted picker (search with a typo, keyboard only), the consent
// page, the sandbox EHR's sign-in, and back to the app with the lifecycle turning ACTIVE; the picker at 360 px; axe
// on the picker and the end page; the page weight and the time to the first result on the whole fixture catalog (31,000 brands),
// printed for the closing note; screenshots into docs/images; and the hijack the security review asked about: a
// sign-in link copied out of one browser and finished in another connects nobody.
import { gzipSync } from 'node:zlib';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import {
  blockingViolations,
  formatViolations,
  launchBrowser,
  runAxe,
  screenshot,
  serveStatic,
  type StaticServer,
} from '../../testkit/browser.js';
import { publishTo } from '../../testkit/catalog.js';
import { loadAllRealSources } from '../../testkit/real-brands.js';
import { sandboxSources } from '../../testkit/sandbox-catalog.js';
import { mintLinkToken, SMART_BRANDS, startSmartWorld, type SmartWorld } from '../../testkit/smart.js';

const require = createRequire(import.meta.url);
/** Screenshots go into docs/images when asked (PORTICO_SCREENSHOTS=1, to refresh the docs), else to a temp dir. */
const shot = (name: string) => (process.env.PORTICO_SCREENSHOTS ? name : path.join(os.tmpdir(), `portico-${name}`));
/** The SDK as built beside this test (dist/sdk/js/src when this file is dist/test/browser/connect.test.js). */
const SDK = fileURLToPath(new URL('../../sdk/js/src/', import.meta.url));
const CALLBACK = '/api/sdk/v1/connect/callback';

/**
 * The app's page: it asks its backend for the signed-in user's link token as it loads (so that the click itself
 * opens connect()'s popup), then a button calls connect() with it in a popup and watches the user's lifecycle.
 */
function appPage(apiUrl: string, publishableKey: string, appUserId: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Companion</title>
<script type="importmap">{"imports":{"openapi-fetch":"/vendor/openapi-fetch.js"}}</script></head>
<body><main><h1>Companion</h1><button id="connect" disabled>Connect your health records</button>
<p>Outcome: <output id="outcome"></output></p><p>State: <output id="state"></output></p></main>
<script type="module">
import { createPortico } from '/sdk/index.js';
const portico = createPortico({ baseUrl: ${JSON.stringify(apiUrl)}, publishableKey: ${JSON.stringify(publishableKey)} });
const button = document.getElementById('connect');
const { linkToken } = await (await fetch('/link-token', { method: 'POST' })).json();
button.disabled = false;
button.addEventListener('click', async () => {
  const outcome = await portico.connect({ linkToken, appUserId: ${JSON.stringify(appUserId)}, redirectUri: location.origin + '/connected', mode: 'popup' });
  document.getElementById('outcome').textContent = JSON.stringify(outcome);
  portico.watchLifecycle(${JSON.stringify(appUserId)}, { intervalMs: 250, onChange: (s) => (document.getElementById('state').textContent = s) });
});
</script></body></html>`;
}

describe('Portico Connect in a real browser (Chromium, the sandbox EHR)', function () {
  this.timeout(180_000);
  let world: SmartWorld;
  let browser: Browser;
  let app: StaticServer;
  const thirdParty: string[] = [];
  /** What a page's CSP refused (the console says so): nothing may be. */
  const cspReports: string[] = [];

  const returnTo = () => `${app.origin}/connected`;
  /** What the app's backend does for its signed-in user: a link token, minted with the account's secret key. */
  const mintFor = (appUserId: string, bind: Record<string, unknown> = {}) =>
    mintLinkToken(world, appUserId, { redirectUri: returnTo(), ...bind });
  /** The app's page: an initiate with the publishable key and the user's link token. */
  const initiate = (body: Record<string, unknown>) =>
    world.api.request('POST', '/api/sdk/v1/connect-sessions', {
      key: world.app.pk,
      body: { redirectUri: returnTo(), ...body },
    });
  const platformUser = (appUserId: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${appUserId}`, { key: world.tenant.key });
  const lifecycle = async (appUserId: string) =>
    (await world.api.request('GET', `/api/sdk/v1/app-users/${appUserId}/lifecycle`, { key: world.app.pk })).body.state;

  before(async () => {
    world = await startSmartWorld();
    // The whole fixture catalog beside the sandbox brands: search as patients would meet it.
    await publishTo(world.api, [...sandboxSources(world.ehr.origin, SMART_BRANDS), ...loadAllRealSources()]);
    browser = await launchBrowser();
    // Every module of the SDK as built (a module left out would stop the page's import, and its button with it).
    const sdkFiles = Object.fromEntries(
      readdirSync(SDK)
        .filter((name) => name.endsWith('.js'))
        .map((name) => [`/sdk/${name}`, { body: readFileSync(path.join(SDK, name)), type: 'text/javascript' }]),
    );
    app = await serveStatic({
      '/': { body: appPage(world.api.url, world.app.pk, 'browser-patient') },
      // The app's backend: it mints its signed-in user's link token with the account's secret key.
      '/link-token': {
        body: async () => JSON.stringify({ linkToken: await mintFor('browser-patient') }),
        type: 'application/json',
      },
      '/connected': { body: '<!doctype html><title>Back in the app</title><p>Back in the app.</p>' },
      '/vendor/openapi-fetch.js': {
        body: readFileSync(require.resolve('openapi-fetch').replace(/index\.c?js$/, 'index.mjs')),
        type: 'text/javascript',
      },
      ...sdkFiles,
    });
    const patched = await world.api.admin('PATCH', `/apps/${world.app.appId}`, {
      redirectUris: [`${app.origin}/connected`],
    });
    expect(patched.status, patched.text).to.equal(200);
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    await world?.close();
  });

  /** Requests a page makes anywhere but the API and the sandbox EHR (there must be none). */
  const watch = (page: Page) => {
    page.on('request', (request) => {
      const origin = new URL(request.url()).origin;
      if (![world.api.url, world.ehr.origin, app.origin].includes(origin)) thirdParty.push(request.url());
    });
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspReports.push(message.text());
    });
  };

  /** The consent page, answered by keyboard: Tab reaches Continue (its first control), Enter follows it. */
  const continueByKeyboard = async (page: Page) => {
    await page.waitForSelector('#continue');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.id')).to.equal('continue');
    await page.keyboard.press('Enter');
  };

  /** An authorizeUrl for the picker (no brand). */
  const pickerUrl = async (appUserId: string) => {
    const started = await initiate({ appUserId, linkToken: await mintFor(appUserId) });
    expect(started.status, started.text).to.equal(201);
    expect(started.body.brandId).to.equal(null);
    return started.body.authorizeUrl as string;
  };

  it('connects from an app page through the picker (a typo, keyboard only) and the EHR, and the user turns ACTIVE', async () => {
    const appUserId = 'browser-patient';
    const context = await browser.newContext();
    const page = await context.newPage();
    watch(page);
    await page.goto(`${app.origin}/`);
    const popupOpened = page.waitForEvent('popup');
    await page.click('#connect');
    const popup = await popupOpened;
    watch(popup);
    await popup.waitForSelector('#q');
    // Keyboard only: type with a typo, move down the list, Enter.
    await popup.keyboard.type('sandbx publc');
    await popup.waitForSelector('[role="option"]');
    expect(await popup.textContent('#status')).to.equal('No exact match. Did you mean Sandbox Public Health?');
    expect(await popup.textContent('[role="option"]')).to.include('Close match');
    expect(await popup.textContent('[role="option"]')).to.include('Sandbox Public Health');
    await screenshot(popup, shot('connect-picker.png'));
    const pickerViolations = await runAxe(popup);
    console.log(
      `      axe on the picker: ${pickerViolations.length} violation(s) ${formatViolations(pickerViolations)}`,
    );
    const axe = blockingViolations(pickerViolations);
    expect(axe, formatViolations(axe)).to.deep.equal([]);
    await popup.keyboard.press('ArrowDown');
    expect(await popup.getAttribute('#q', 'aria-activedescendant')).to.equal('option-0');
    await popup.keyboard.press('Enter');
    // Portico Connect's consent page, then the EHR's sign-in, by keyboard too.
    await continueByKeyboard(popup);
    await popup.waitForURL(`${world.ehr.origin}/**`);
    await popup.focus('#username');
    await popup.keyboard.type('ada');
    await popup.keyboard.press('Tab');
    await popup.keyboard.type('sandbox');
    await popup.keyboard.press('Enter'); // the form's first submit button: Allow
    // Portico Connect's end page tells the app the outcome; connect() resolves and closes the popup by itself.
    const closed = popup.waitForEvent('close');
    await page.waitForFunction(() => (globalThis as any).document.getElementById('outcome').textContent !== '');
    await closed;
    const outcome = JSON.parse((await page.textContent('#outcome'))!);
    expect(outcome).to.include({ status: 'connected' });
    await page.waitForFunction(() => (globalThis as any).document.getElementById('state').textContent === 'ACTIVE');
    const user = await platformUser(appUserId);
    expect(user.body.connections[0]).to.include({ id: outcome.connectionId, brandId: world.brands['public-v2'] });
    expect(thirdParty, 'requests beyond the API, the EHR and the app').to.deep.equal([]);
    expect(cspReports, "content refused by the pages' CSP").to.deep.equal([]);
    await context.close();
  });

  it('ends on a page that names the outcome and returns to the app by its link (keyboard only)', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    watch(page);
    await page.goto(`${await pickerUrl('browser-end')}?brand=${world.brands['secret']}`);
    await continueByKeyboard(page);
    await page.waitForURL(`${world.ehr.origin}/**`);
    await page.focus('#username');
    await page.keyboard.type('grace');
    await page.keyboard.press('Tab');
    await page.keyboard.type('sandbox');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.outcome-connected');
    expect(await page.textContent('h1')).to.include('Connected to Sandbox Secret Hospital');
    await screenshot(page, shot('connect-end.png'));
    const endViolations = await runAxe(page);
    console.log(`      axe on the end page: ${endViolations.length} violation(s) ${formatViolations(endViolations)}`);
    const endAxe = blockingViolations(endViolations);
    expect(endAxe, formatViolations(endAxe)).to.deep.equal([]);
    // Tab reaches the link (the page's only control); Enter follows it back to the app with the outcome.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.id')).to.equal('return');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${app.origin}/connected?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('status')).to.equal('connected');
    expect(cspReports).to.deep.equal([]);
    await context.close();
  });

  it('works at 360 px wide, and finds a health system near a ZIP code', async () => {
    const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
    const page = await context.newPage();
    watch(page);
    await page.goto(await pickerUrl('browser-narrow'));
    await page.fill('#near', '53703');
    await page.focus('#q');
    await page.keyboard.type('sandbox');
    await page.waitForSelector('[role="option"]');
    expect(await page.evaluate('document.documentElement.scrollWidth')).to.be.at.most(360);
    await screenshot(page, shot('connect-picker-narrow.png'));
    const narrowViolations = await runAxe(page);
    console.log(`      axe at 360 px: ${narrowViolations.length} violation(s) ${formatViolations(narrowViolations)}`);
    const axe = blockingViolations(narrowViolations);
    expect(axe, formatViolations(axe)).to.deep.equal([]);
    expect(thirdParty).to.deep.equal([]);
    await context.close();
  });

  it('weighs at most 50 KB compressed, and shows the first result soon after the last keystroke', async () => {
    const url = await pickerUrl('browser-weight');
    const parts = await Promise.all(
      [
        url,
        `${world.api.url}/api/sdk/v1/connect/assets/picker.js`,
        `${world.api.url}/api/sdk/v1/connect/assets/connect.css`,
      ].map(async (u) => gzipSync(Buffer.from(await (await fetch(u)).arrayBuffer())).length),
    );
    const total = parts.reduce((a, b) => a + b, 0);
    console.log(`      page weight: HTML ${parts[0]} B + JS ${parts[1]} B + CSS ${parts[2]} B = ${total} B gzipped`);
    expect(total).to.be.at.most(50 * 1024);

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url);
    const times: number[] = [];
    for (const query of ['mayo clinic', 'kaiser', 'stanford', 'sandbox health', 'mercy']) {
      await page.fill('#q', '');
      await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('[role="option"]').length === 0);
      // The time from the last keystroke (its input event) to the first result in the list, measured in the page.
      await page.evaluate(`window.__probe = new Promise((resolve) => {
        let last = 0;
        document.getElementById('q').addEventListener('input', () => (last = performance.now()));
        new MutationObserver((_, observer) => {
          if (last && document.querySelector('[role="option"]')) { observer.disconnect(); resolve(performance.now() - last); }
        }).observe(document.getElementById('results'), { childList: true });
      }); 0`); // (an expression that is not the promise: evaluate would wait for it)
      await page.focus('#q');
      await page.keyboard.type(query);
      const took = await Promise.race([
        page.evaluate<number>('window.__probe'),
        new Promise<number>((_, reject) => setTimeout(() => reject(new Error(`no result for "${query}"`)), 15_000)),
      ]);
      times.push(took);
    }
    console.log(
      `      time to first result after the last keystroke (${times.length} queries, 31,000-brand catalog, 120 ms debounce included): ${times.map((t) => t.toFixed(0)).join(', ')} ms`,
    );
    await context.close();
  });

  it('answers a brand Portico cannot connect with the picker again, saying so', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${await pickerUrl('browser-stranger')}?brand=${world.brands['unregistered']}`);
    expect(await page.textContent('[role="alert"]')).to.include('cannot be connected through Portico yet');
    expect(await page.isVisible('#q')).to.equal(true);
    await context.close();
  });

  it("signs in at a brand the app named and ends at the app's redirect URI, connected", async () => {
    // The README's path (no picker): the browser goes app → Portico (consent) → EHR sign-in → Portico's callback →
    // the app, a chain of redirects after a form submission that no sign-in page policy may cut short.
    const brandId = world.brands['public-v2'];
    const started = await initiate({
      appUserId: 'browser-direct',
      brandId,
      linkToken: await mintFor('browser-direct', { brandId }),
    });
    expect(started.status, started.text).to.equal(201);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      watch(page);
      await page.goto(started.body.authorizeUrl);
      await page.click('#continue');
      await page.waitForURL(`${world.ehr.origin}/**`);
      await page.fill('#username', 'grace');
      await page.fill('#password', 'sandbox');
      await page.click('button.allow');
      await page.waitForURL(`${app.origin}/connected?**`);
      const back = new URL(page.url());
      expect(back.searchParams.get('status'), back.href).to.equal('connected');
      expect(await page.textContent('p')).to.equal('Back in the app.');
      expect(await lifecycle('browser-direct')).to.equal('ACTIVE');
      expect(await context.cookies(world.api.url), 'the sign-in left the cookie').to.deep.equal([]);
    } finally {
      await context.close();
    }
  });

  it('a second browser context in Chromium opening the victim’s link fails, and no connection appears', async () => {
    const attackerId = 'browser-attacker';
    const victimId = 'browser-victim';
    const brandId = world.brands['public-v2'];
    // The publishable key is in every page of the app, but alone it starts no sign-in, for the victim or anyone:
    const keyOnly = await initiate({ appUserId: victimId, brandId });
    expect(keyOnly.status, keyOnly.text).to.equal(400);
    expect(keyOnly.body.code).to.equal('BAD_REQUEST');
    // nor does a link token the app's backend minted for the attacker's own account.
    const borrowed = await initiate({ appUserId: victimId, brandId, linkToken: await mintFor(attackerId) });
    expect(borrowed.status, borrowed.text).to.equal(400);
    expect(borrowed.body).to.deep.include({ code: 'LINK_TOKEN_MISMATCH' });
    expect(borrowed.body.details.mismatched).to.deep.equal(['appUserId']);
    expect(await lifecycle(victimId)).to.equal('UNLINKED');

    // So the attacker starts a sign-in of their own, in their browser, and stops at the health system's sign-in page.
    const started = await initiate({
      appUserId: attackerId,
      brandId,
      linkToken: await mintFor(attackerId, { brandId }),
    });
    expect(started.status, started.text).to.equal(201);
    const attacker = await browser.newContext();
    const victim = await browser.newContext();
    try {
      const attackerPage = await attacker.newPage();
      await attackerPage.goto(started.body.authorizeUrl);
      await attackerPage.click('#continue');
      await attackerPage.waitForURL(`${world.ehr.origin}/**`);
      const copiedLink = attackerPage.url(); // where Portico's 302 pointed: it carries the attacker's `state`
      expect(new URL(copiedLink).searchParams.get('state')).to.be.a('string').that.is.not.empty;
      const [binding] = await attacker.cookies(world.api.url);
      expect(binding).to.include({ name: 'portico-connect', httpOnly: true, sameSite: 'Lax', path: '/' });

      // The victim opens the copied link in their own browser, signs in as themselves and allows.
      expect(await victim.cookies()).to.deep.equal([]);
      const victimPage = await victim.newPage();
      await victimPage.goto(copiedLink);
      await victimPage.fill('#username', 'ada');
      await victimPage.fill('#password', 'sandbox');
      const exchanges = world.ehr.stats.tokenRequests.authorization_code;
      const answers: number[] = [];
      victimPage.on('response', (r) => r.url().startsWith(`${world.api.url}${CALLBACK}?`) && answers.push(r.status()));
      await victimPage.click('button.allow');
      // The health system sends the victim's browser to Portico's callback, which refuses it (no binding cookie)
      // rather than sending it on to the app.
      await victimPage.waitForURL((url) => url.pathname === CALLBACK || url.origin === app.origin);
      const landed = new URL(victimPage.url());
      expect(`${landed.origin}${landed.pathname}`, landed.href).to.equal(`${world.api.url}${CALLBACK}`);
      expect(answers).to.deep.equal([400]);
      expect(await victimPage.textContent('h1')).to.equal('Finish in the browser you started in');
      expect(await victimPage.textContent('main p')).to.include('Nothing was connected');

      // Nothing changed: the code was never exchanged, the attacker's user holds no connection and is not ACTIVE,
      // the session is not completed, and the victim's user was never even created.
      expect(world.ehr.stats.tokenRequests.authorization_code).to.equal(exchanges);
      const user = await platformUser(attackerId);
      expect(user.status, user.text).to.equal(200);
      expect(user.body.connections).to.deep.equal([]);
      expect(user.body.state).to.equal('LIMITED');
      const session = await world.api.mongo.db
        .collection<{ _id: string; status: string }>('connect_sessions')
        .findOne({ _id: started.body.id });
      expect(session).to.include({ status: 'LAUNCHED', connectionId: null, completedAt: null });
      expect(await lifecycle(victimId)).to.equal('UNLINKED');
    } finally {
      await victim.close();
      await attacker.close();
    }
  });
});
