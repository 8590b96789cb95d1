// The patient's own page in a real browser (Debian's Chromium through playwright-core): a patient connected at the
// sandbox EHR whose records an app has read opens the link the account minted; the page names the health system,
// what the app may read and who read what in plain words; every axe-core rule (best practices and experimental ones
// too) with no violation of any impact, at desktop width and at 360 px; no request to any origin but the API's;
// nothing refused by its CSP; "Stop sharing" by keyboard alone revokes the connection, tokens revoked at the EHR and
// `connection.revoked` by the patient; and its screenshots for docs/images.
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { GRANTS } from '../../testkit/apps.js';
import {
  cspRefusals,
  expectEveryAxeRuleClean,
  originsOf,
  screenshot,
  serveStatic,
  withBrowser,
  type StaticServer,
  type BrowserSession,
} from '../../testkit/browser.js';
import { eventsOf } from '../../testkit/events.js';
import { connectThroughBrowser, startSmartWorld, until, type SmartWorld } from '../../testkit/smart.js';

const shot = (name: string) => (process.env.PORTICO_SCREENSHOTS ? name : path.join(os.tmpdir(), `portico-${name}`));
const READS = ['Observation', 'MedicationRequest', 'Condition', 'AllergyIntolerance', 'Immunization', 'Encounter'];

describe("The patient's own page in a real browser (Chromium, the sandbox EHR)", function () {
  this.timeout(120_000);
  let world: SmartWorld;
  let session: BrowserSession;
  /** The app's own site, where the patient clicks "Manage sharing". */
  let app: StaticServer;
  let manageSharing = '';
  const appSite = () => app.origin.replace('127.0.0.1', 'localhost');
  withBrowser((s) => (session = s));

  before(async () => {
    world = await startSmartWorld({ appName: 'Companion', grants: { ...GRANTS, resourceTypes: READS } });
    app = await serveStatic({
      '/': {
        body: async () =>
          `<!doctype html><html lang="en"><title>Companion</title><main><a href="${manageSharing}">Manage sharing</a></main></html>`,
      },
    });
  });
  after(async () => {
    await app?.close();
    await world?.close();
  });

  /** A patient connected and synced, whose records Companion then read (and was once refused). */
  const connectedAndRead = async (appUserId: string): Promise<string> => {
    const { back } = await connectThroughBrowser(world, 'public-v2', appUserId, { username: 'ada' });
    const connectionId = back.searchParams.get('connectionId')!;
    const user = () => world.api.request('GET', `/api/platform/v1/app-users/${appUserId}`, { key: world.tenant.key });
    await until(
      'the first sync',
      user,
      (res) => res.body.connections?.[0]?.sync?.status === 'IDLE' && res.body.connections[0].sync.lastSyncedAt,
    );
    const fhir = `/api/sdk/v1/fhir/connections/${connectionId}`;
    for (const [type, status] of [
      ['Condition', 200],
      ['MedicationRequest', 200],
      ['Observation?category=laboratory', 200],
      ['Procedure', 403],
    ] as const) {
      const res = await world.api.request('GET', `${fhir}/${type}`, { key: world.app.ak });
      expect(res.status, res.text).to.equal(status);
    }
    return connectionId;
  };
  const portalUrl = async (appUserId: string) => {
    const minted = await world.api.request('POST', `/api/platform/v1/app-users/${appUserId}/portal-sessions`, {
      key: world.tenant.key,
    });
    expect(minted.status, minted.text).to.equal(201);
    return minted.body.url as string;
  };
  const axeClean = expectEveryAxeRuleClean;
  const csp = () => cspRefusals(session.messages);

  it('shows what is shared and who read it, and stops sharing by keyboard alone', async () => {
    const { page } = session;
    await page.setViewportSize({ width: 1024, height: 900 });
    const connectionId = await connectedAndRead('portal-browser');
    const origins = originsOf(page);
    // The patient follows the app's "Manage sharing" link from the app's own site: the page's cookie must survive
    // the redirect of a navigation that began on another site.
    manageSharing = await portalUrl('portal-browser');
    // (localhost, not 127.0.0.1: another site, since ports do not make one)
    await page.goto(`${appSite()}/`);
    await page.click('text=Manage sharing');
    await page.waitForURL(`${world.api.url}/api/sdk/v1/portal`);
    expect(await page.textContent('h1')).to.equal('Your shared health records');
    expect(await page.locator('.connection h3').allTextContents()).to.deep.equal(['Sandbox Public Health']);
    expect(await page.locator('.types li').allTextContents()).to.deep.equal([
      'Lab results and vital signs',
      'Medications',
      'Conditions (health problems)',
      'Allergies',
      'Immunizations',
      'Visits',
    ]);
    const reads = await page.locator('.reads li').allTextContents();
    expect(reads, JSON.stringify(reads)).to.have.length(4);
    expect(reads[0]).to.match(/Companion was refused your procedures from Sandbox Public Health: it is not allowed/);
    expect(reads[1]).to.match(/Companion read \d+ lab results and vital signs from Sandbox Public Health\./);
    expect(reads[2]).to.match(
      /Companion (read \d+ medications?|looked for your medications) from Sandbox Public Health/,
    );
    expect(reads[3]).to.match(/Companion (read \d+ conditions?|looked for your conditions) /);
    await axeClean(page, "the patient's page");
    await screenshot(page, shot('portal.png'), { fullPage: true });

    // Keyboard only: the page's controls in order are the Stop sharing button, then the download link.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).to.equal(
      'Stop sharing Sandbox Public Health with Companion',
    );
    const revocations = world.ehr.stats.revocations;
    await page.keyboard.press('Enter');
    await page.waitForSelector('[role="status"]');
    expect(await page.textContent('[role="status"]')).to.include('Sharing stopped.');
    expect(await page.textContent('main')).to.include('You are not sharing records from any health system.');
    await axeClean(page, "the patient's page after Stop sharing");
    const revoked = (await eventsOf(world.api.mongo.db, world.tenant.accountId)).filter(
      (event) => event.type === 'connection.revoked' && event.data.connectionId === connectionId,
    );
    expect(revoked.map((event) => event.data.by)).to.deep.equal(['patient']);
    await until(
      'the tokens revoked at the health system',
      async () => world.ehr.stats.revocations,
      (count) => count > revocations,
    );
    expect(origins, 'requests beyond the app and the API').to.deep.equal([appSite(), world.api.url]);
    expect(csp(), "content refused by the page's CSP").to.deep.equal([]);
  });

  it('fits 360 px wide, clean for every axe rule there, and downloads the log as FHIR JSON', async () => {
    const { page } = session;
    await page.setViewportSize({ width: 360, height: 740 });
    await connectedAndRead('portal-narrow');
    const origins = originsOf(page);
    await page.goto(await portalUrl('portal-narrow'));
    await page.waitForSelector('.connection');
    expect(await page.evaluate('document.documentElement.scrollWidth')).to.be.at.most(360);
    await axeClean(page, "the patient's page at 360 px");
    await screenshot(page, shot('portal-narrow.png'), { fullPage: true });
    const downloading = page.waitForEvent('download');
    await page.click('a[download]');
    const download = await downloading;
    expect(download.suggestedFilename()).to.equal('access-log.json');
    expect(origins).to.deep.equal([world.api.url]);
    expect(csp()).to.deep.equal([]);
  });

  it('says so when the link is used a second time', async () => {
    const { page } = session;
    await connectedAndRead('portal-twice');
    const url = await portalUrl('portal-twice');
    await page.goto(url);
    await page.goto(url);
    expect(await page.textContent('h1')).to.equal('This link was already used');
    await axeClean(page, 'the used-link page');
  });
});
