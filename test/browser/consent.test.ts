// Portico Connect's consent page in a real browser (Debian's Chromium through playwright-core): keyboard only, on to
// the health system with Continue and back to the app with "Don't share"; every axe-core rule (best practices and
// experimental ones too) with no violation of any impact; 360 px wide; no request beyond the API before Continue;
// nothing refused by its CSP; and its screenshots for docs/images.
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { BrowserContext } from 'playwright-core';
import { GRANTS } from '../../testkit/apps.js';
import {
  cspRefusals,
  expectEveryAxeRuleClean,
  originsOf,
  screenshot,
  serveStatic,
  withBrowser,
  type BrowserSession,
  type StaticServer,
} from '../../testkit/browser.js';
import { mintLinkToken, startSmartWorld, type SmartWorld } from '../../testkit/smart.js';

/** Screenshots go into docs/images when asked (PORTICO_SCREENSHOTS=1, to refresh the docs), else to a temp dir. */
const shot = (name: string) => (process.env.PORTICO_SCREENSHOTS ? name : path.join(os.tmpdir(), `portico-${name}`));
const READS = ['Observation', 'MedicationRequest', 'Condition', 'AllergyIntolerance', 'Immunization', 'Encounter'];

describe("Portico Connect's consent page in a real browser (Chromium, the sandbox EHR)", function () {
  this.timeout(120_000);
  let world: SmartWorld;
  let app: StaticServer;
  let session: BrowserSession;
  withBrowser((s) => (session = s));

  before(async () => {
    world = await startSmartWorld({ appName: 'Companion', grants: { ...GRANTS, resourceTypes: READS } });
    app = await serveStatic({
      '/connected': { body: '<!doctype html><html lang="en"><title>Companion</title><p>Back in Companion.</p>' },
    });
    const patched = await world.api.admin('PATCH', `/apps/${world.app.appId}`, {
      redirectUris: [`${app.origin}/connected`],
    });
    expect(patched.status, patched.text).to.equal(200);
  });
  after(async () => {
    await app?.close();
    await world?.close();
  });

  /** An authorizeUrl for the brand the app named. */
  const authorizeUrl = async (appUserId: string, brandKey = 'public-v2') => {
    const brandId = world.brands[brandKey];
    const started = await world.api.request('POST', '/api/sdk/v1/connect-sessions', {
      key: world.app.pk,
      body: {
        appUserId,
        brandId,
        redirectUri: `${app.origin}/connected`,
        linkToken: await mintLinkToken(world, appUserId, { brandId, redirectUri: `${app.origin}/connected` }),
      },
    });
    expect(started.status, started.text).to.equal(201);
    return started.body.authorizeUrl as string;
  };
  const axeClean = expectEveryAxeRuleClean;
  const csp = () => cspRefusals(session.messages);
  const apiCookies = (context: BrowserContext) => context.cookies(world.api.url);

  it('continues to the health system by keyboard alone, asking nothing of anyone else before', async () => {
    const { page, context } = session;
    await page.setViewportSize({ width: 1024, height: 800 });
    const origins = originsOf(page);
    await page.goto(await authorizeUrl('consent-keyboard'));
    expect(await page.textContent('h1')).to.equal('Share your records with Companion?');
    expect(await page.locator('main ul li').allTextContents()).to.deep.equal([
      'Lab results and vital signs',
      'Medications',
      'Conditions (health problems)',
      'Allergies',
      'Immunizations',
      'Visits',
    ]);
    expect(await page.textContent('main')).to.include('Until you stop sharing.');
    expect(await page.locator('h2').allTextContents()).to.deep.equal(['What Companion may read', 'For how long']);
    expect((await apiCookies(context)).map((c) => [c.name, c.httpOnly, c.sameSite])).to.deep.equal([
      ['portico-consent', true, 'Lax'],
    ]);
    await axeClean(page, 'the consent page');
    await screenshot(page, shot('consent.png'), { fullPage: true });
    expect(origins, 'requests before Continue').to.deep.equal([world.api.url]);

    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).to.equal('Continue to Sandbox Public Health');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${world.ehr.origin}/**`);
    expect(origins).to.deep.equal([world.api.url, world.ehr.origin]);
    // The answer used, the consent cookie is gone; the sign-in's binding took its place.
    expect((await apiCookies(context)).map((c) => c.name)).to.deep.equal(['portico-connect']);
    expect(csp(), "content refused by the page's CSP").to.deep.equal([]);
  });

  it('declines by keyboard alone and lands back at the app with access_denied, the health system never asked', async () => {
    const { page, context } = session;
    const origins = originsOf(page);
    await page.goto(await authorizeUrl('consent-decline', 'secret'));
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).to.equal("Don't share");
    await page.keyboard.press('Enter');
    await page.waitForURL(`${app.origin}/connected?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('status')).to.equal('failed');
    expect(back.searchParams.get('error')).to.equal('access_denied');
    expect(origins).to.deep.equal([world.api.url, app.origin]);
    expect(await apiCookies(context)).to.deep.equal([]);
    expect(csp()).to.deep.equal([]);
  });

  it('fits 360 px wide and stays clean for every axe rule there', async () => {
    const { page } = session;
    await page.setViewportSize({ width: 360, height: 740 });
    const origins = originsOf(page);
    await page.goto(await authorizeUrl('consent-narrow', 'jwt-rs'));
    await page.waitForSelector('#continue');
    expect(await page.evaluate('document.documentElement.scrollWidth')).to.be.at.most(360);
    await axeClean(page, 'the consent page at 360 px');
    await screenshot(page, shot('consent-narrow.png'), { fullPage: true });
    expect(origins).to.deep.equal([world.api.url]);
    expect(csp()).to.deep.equal([]);
  });
});
