// Portico Connect's consent page before the health system's sign-in (docs/connecting.md, "Consent before sign-in"):
// what it says, that only the patient's own answer (the page's cookie and its link, matching) moves the sign-in on,
// that "Don't share" returns to the app with access_denied, and that neither the page nor a refusal asks anything of
// the health system. The visits go through a replica that has never read the brand's discovery (the initiate, on
// the first replica, did), so a request to the EHR would show in its counts.
import { expect } from 'chai';
import type { TestApi } from '../../../../../testkit/api.js';
import { GRANTS } from '../../../../../testkit/apps.js';
import {
  consentLink,
  CookieJar,
  initiateLaunch,
  mintLinkToken,
  startSmartWorld,
  throughConsent,
  visit,
  APP_RETURN,
  type SmartWorld,
} from '../../../../../testkit/smart.js';

const READS = ['Observation', 'MedicationRequest', 'MedicationDispense', 'AllergyIntolerance'];
const grant = (resourceTypes: string[]) => ({ grants: { ...GRANTS, resourceTypes } });

describe('Portico Connect: consent before the sign-in (sandbox EHR)', function () {
  this.timeout(60_000);
  let world: SmartWorld;
  let fresh: TestApi;
  before(async () => {
    world = await startSmartWorld(grant(READS));
    fresh = await world.replica();
  });
  after(() => world?.close());

  const sessionOf = (id: string) => world.api.mongo.db.collection('connect_sessions').findOne({ _id: id as never });
  /** What the EHR has been asked: discovery, FHIR reads, token requests. */
  const ehrRequests = () => {
    const { discoveryRequests, fhirRequests, tokenRequests } = world.ehr.stats;
    return discoveryRequests + fhirRequests + tokenRequests.authorization_code + tokenRequests.refresh_token;
  };
  /** An authorizeUrl for the brand, on the replica that has not discovered it. */
  const authorizeOnFresh = async (brandKey: string, appUserId: string) => {
    const { id, authorizeUrl } = await initiateLaunch(world, brandKey, appUserId);
    return { id, authorizeUrl: fresh.url + new URL(authorizeUrl).pathname };
  };

  it("names the app, what its install may read in plain words, for how long, and the health system's sign-in", async () => {
    const { id, authorizeUrl } = await authorizeOnFresh('public-v2', 'consent-page');
    const asked = ehrRequests();
    const page = await visit(authorizeUrl, new CookieJar());
    expect(page.status).to.equal(200);
    expect(page.text).to.include('<h1>Share your records with Connect test app?</h1>');
    const items = [...page.text.matchAll(/<li>([^<]+)<\/li>/g)].map((m) => m[1]);
    expect(items).to.deep.equal(['Lab results and vital signs', 'Medications', 'Allergies']);
    expect(page.text).to.include('Until you stop sharing. You can stop sharing at any time from');
    expect(page.text).to.include('>Continue to Sandbox Public Health</a>');
    expect(page.text).to.include(">Don't share</a>");
    expect(page.text).to.match(/<main>[\s\S]*<\/main>/);
    expect(page.text).to.not.match(/ style=|<style|<script(?! type="module" src="\/)/);
    const res = await fetch(authorizeUrl, { redirect: 'manual' });
    expect(res.headers.get('content-security-policy')).to.match(
      /^default-src 'none'; script-src 'self'; style-src 'self';/,
    );
    expect(res.headers.get('cache-control')).to.equal('no-store');
    // The cookie: HttpOnly, SameSite=Lax, living no longer than the session; plain http here, so no Secure.
    const [cookie] = page.setCookie;
    expect(cookie).to.match(/^portico-consent=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    expect(Number(/Max-Age=(\d+)/.exec(cookie!)![1])).to.be.within(1, 1800);
    // Both links carry the cookie's value.
    const value = /^portico-consent=([^;]+)/.exec(cookie!)![1];
    expect(consentLink(page, authorizeUrl).searchParams.get('consent')).to.equal(value);
    expect(consentLink(page, authorizeUrl, 'decline').searchParams.get('decline')).to.equal('1');
    expect(ehrRequests()).to.equal(asked);
    expect((await sessionOf(id))?.status).to.equal('PENDING');
  });

  it('reads a grant of every type as the whole list of categories', async () => {
    const patched = await world.api.admin('PATCH', `/apps/${world.app.appId}`, grant(['*']));
    expect(patched.status, patched.text).to.equal(200);
    try {
      const { authorizeUrl } = await authorizeOnFresh('public-v2', 'consent-all');
      const page = await visit(authorizeUrl);
      const items = [...page.text.matchAll(/<li>([^<]+)<\/li>/g)].map((m) => m[1]);
      expect(items).to.include.members(['Lab results and vital signs', 'Conditions (health problems)', 'Visits']);
      expect(items.length).to.be.greaterThan(15);
    } finally {
      await world.api.admin('PATCH', `/apps/${world.app.appId}`, grant(READS));
    }
  });

  it('shows the page again, asking nothing of the EHR, for an answer without the matching cookie', async () => {
    const { id, authorizeUrl } = await authorizeOnFresh('public-v2', 'consent-forged');
    const asked = ehrRequests();
    const browser = new CookieJar();
    const page = await visit(authorizeUrl, browser);
    const given = consentLink(page, authorizeUrl);
    const brand = world.brands['public-v2']!;
    for (const [url, jar] of [
      [`${authorizeUrl}?brand=${brand}&consent=${'A'.repeat(43)}`, browser], // a made-up value
      [`${authorizeUrl}?brand=${brand}&consent=`, browser], // none
      [`${authorizeUrl}?consent=${'A'.repeat(43)}&decline=1`, browser],
      [given.href, new CookieJar()], // the right value, from another browser (no cookie)
    ] as const) {
      const again = await visit(url, jar);
      expect(again.status, url).to.equal(200);
      expect(again.text).to.include('<h1>Share your records with');
      expect(again.setCookie[0], url).to.match(/^portico-consent=[A-Za-z0-9_-]{43};/); // a fresh value each time
    }
    // The value the first page gave is no longer the browser's: its link shows the page again too.
    expect((await visit(given.href, browser)).status).to.equal(200);
    expect(ehrRequests()).to.equal(asked);
    expect((await sessionOf(id))?.status).to.equal('PENDING');
  });

  it("returns to the app with access_denied on Don't share, without a word to the EHR, and clears the cookie", async () => {
    const { id, authorizeUrl } = await authorizeOnFresh('jwt-es', 'consent-decline');
    const asked = ehrRequests();
    const browser = new CookieJar();
    const declined = await throughConsent(authorizeUrl, browser, 'decline');
    expect(declined.status).to.equal(303);
    expect(declined.setCookie).to.include('portico-consent=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax');
    expect(Object.fromEntries(declined.location!.searchParams)).to.deep.equal({
      from: 'portico',
      session: id,
      status: 'failed',
      error: 'access_denied',
    });
    expect(ehrRequests()).to.equal(asked);
    expect(await sessionOf(id)).to.deep.include({ status: 'FAILED', failure: 'access_denied' });
    const user = await world.api.request('GET', '/api/platform/v1/app-users/consent-decline', {
      key: world.tenant.key,
    });
    expect(user.body.connections).to.deep.equal([]);
    // The link is spent.
    expect((await visit(authorizeUrl, browser)).location!.searchParams.get('error')).to.equal('session_used');
  });

  it('continues to the EHR with the right cookie (and only then discovers it), once', async () => {
    const { id, authorizeUrl } = await authorizeOnFresh('secret', 'consent-continue');
    const discovered = world.ehr.stats.discoveryRequests;
    const browser = new CookieJar();
    const page = await visit(authorizeUrl, browser);
    expect(world.ehr.stats.discoveryRequests).to.equal(discovered);
    const answer = consentLink(page, authorizeUrl);
    const launched = await visit(answer.href, browser);
    expect(launched.status, launched.text).to.equal(302);
    expect(launched.location!.href).to.include(`${world.ehr.origin}/oauth/secret/authorize`);
    expect(world.ehr.stats.discoveryRequests).to.be.greaterThan(discovered);
    expect(launched.setCookie).to.include('portico-consent=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax');
    expect((await sessionOf(id))?.status).to.equal('LAUNCHED');
    // One sign-in per link: the same answer again starts no other.
    const again = await visit(answer.href, browser);
    expect(again.location!.searchParams.get('error')).to.equal('session_used');
  });

  it("leads from the picker's choice through consent to the EHR, and a refusal there ends on the end page", async () => {
    const start = async (appUserId: string) => {
      const linkToken = await mintLinkToken(world, appUserId);
      const started = await world.api.request('POST', '/api/sdk/v1/connect-sessions', {
        key: world.app.pk,
        body: { appUserId, redirectUri: APP_RETURN, linkToken },
      });
      expect(started.status, started.text).to.equal(201);
      return `${fresh.url}${new URL(started.body.authorizeUrl).pathname}?brand=${world.brands['public-v1']}`;
    };
    const chosen = await throughConsent(await start('consent-picked'), new CookieJar());
    expect(chosen.status, chosen.text).to.equal(302);
    expect(chosen.location!.href).to.include(`${world.ehr.origin}/oauth/public-v1/authorize`);

    const declined = await throughConsent(await start('consent-picked-no'), new CookieJar(), 'decline');
    expect(declined.status).to.equal(200);
    expect(declined.text).to.include('You chose not to share your records from Sandbox Legacy Clinic.');
    const back = new URL(/id="return" href="([^"]+)"/.exec(declined.text)![1]!.replaceAll('&#38;', '&'));
    expect(back.searchParams.get('error')).to.equal('access_denied');
  });
});
