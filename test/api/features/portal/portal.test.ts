// The patient's own page over real HTTP against the embedded database: the link an account mints (single use, 15
// minutes, a cookie for the page after), what the page shows (the connections, what the app may read, the access
// log in plain words, no clinical value), the log's FHIR JSON download, "Stop sharing" (the connection revoked as
// DELETE /connections/{id} revokes it, `connection.revoked` by the patient; a form without the page's token, another
// user's connection, or another account's cookie change nothing), and isolation between accounts.
import { expect } from 'chai';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { appOf, connectionOf, GRANTS, type AppKeys } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { eventsOf } from '../../../../testkit/events.js';
import { heartRate, observationBundle } from '../../../../testkit/observations.js';

describe("platform: the patient's own page (portal sessions)", () => {
  const clock = new ManualClock(new Date('2026-12-03T14:05:00.000Z'));
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;
  let app: AppKeys;
  let brandId: string;
  let brandName: string;

  before(async () => {
    api = await TestApi.start({ clock });
    await publishTo(api, realSources());
    const brand = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!;
    brandId = brand.id;
    brandName = brand.name;
    tenant = await api.tenant();
    other = await api.tenant();
    app = await appOf(api, tenant, { ...GRANTS, resourceTypes: ['Observation', 'MedicationRequest'] });
  });
  after(() => api.close());

  const mint = (appUserId: string, key = tenant.key) =>
    api.request('POST', `/api/platform/v1/app-users/${appUserId}/portal-sessions`, { key });
  /** A browser's visit: no redirect followed, with the cookie given. */
  const visit = (url: string, cookie?: string, method = 'GET') =>
    fetch(url.startsWith('http') ? url : api.url + url, {
      method,
      redirect: 'manual',
      ...(cookie && { headers: { cookie } }),
    });
  /** Opens a freshly minted link: the page's cookie (as a Cookie header). */
  const open = async (appUserId: string): Promise<string> => {
    const minted = await mint(appUserId);
    expect(minted.status, minted.text).to.equal(201);
    const opened = await visit(minted.body.url);
    expect(opened.status).to.equal(303);
    expect(opened.headers.get('location')).to.equal('/api/sdk/v1/portal');
    const [line] = opened.headers.getSetCookie();
    expect(line).to.match(
      /^portico-portal=[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=900; HttpOnly; SameSite=Lax$/,
    );
    return line!.split(';')[0]!;
  };
  const pageOf = async (cookie: string) => {
    const page = await visit('/api/sdk/v1/portal', cookie);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-security-policy')).to.include("script-src 'self'");
    return page.text();
  };

  it('mints a single-use link that opens the page once, within 15 minutes', async () => {
    await connectionOf(api, tenant, app, 'portal-once', brandId);
    const minted = await mint('portal-once');
    expect(minted.status, minted.text).to.equal(201);
    expect(minted.headers.get('cache-control')).to.equal('no-store');
    expect(minted.body.url).to.match(
      /^http:\/\/127\.0\.0\.1:\d+\/api\/sdk\/v1\/portal\/open\/[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}$/,
    );
    expect(minted.body.expiresAt).to.equal('2026-12-03T14:20:00.000Z');
    const first = await visit(minted.body.url);
    expect(first.status).to.equal(303);
    const again = await visit(minted.body.url);
    expect(again.status).to.equal(410);
    expect(await again.text()).to.include('This link was already used');
    expect(again.headers.getSetCookie()).to.deep.equal([]);
    // A forged secret for a real link is unknown, and spends nothing.
    const late = await mint('portal-once');
    const forged = await visit(late.body.url.replace(/\.[^.]+$/, '.' + 'x'.repeat(43)));
    expect(forged.status).to.equal(404);
    // The link expires 15 minutes after it was made.
    clock.advance(15 * 60_000);
    const expired = await visit(late.body.url);
    expect(expired.status).to.equal(410);
    expect(await expired.text()).to.include('This link has expired');
  });

  it('keeps the page for its browser 15 minutes, and for no other', async () => {
    await connectionOf(api, tenant, app, 'portal-cookie', brandId);
    const cookie = await open('portal-cookie');
    expect(await pageOf(cookie)).to.include('Your shared health records');
    const none = await visit('/api/sdk/v1/portal');
    expect(none.status).to.equal(410);
    expect(await none.text()).to.include('This page has expired');
    const forged = await visit('/api/sdk/v1/portal', cookie.replace(/\.[^.]+$/, '.' + 'y'.repeat(43)));
    expect(forged.status).to.equal(410);
    clock.advance(15 * 60_000);
    expect((await visit('/api/sdk/v1/portal', cookie)).status).to.equal(410);
    expect((await visit('/api/sdk/v1/portal/access-log.json', cookie)).status).to.equal(410);
  });

  it('shows each connection, what the app may read, and who read what in plain words (never a value)', async () => {
    const connectionId = await connectionOf(api, tenant, app, 'portal-page', brandId);
    const ingested = await api.request('POST', `/api/platform/v1/connections/${connectionId}/observations`, {
      key: tenant.key,
      body: observationBundle([
        heartRate({
          id: 'hr-a',
          valueQuantity: { value: 187, unit: 'beats/minute', system: 'http://unitsofmeasure.org', code: '/min' },
        }),
        heartRate({ id: 'hr-b' }),
      ]),
    });
    expect(ingested.status, ingested.text).to.equal(200);
    const read = await api.request('POST', '/api/sdk/v1/observations/_search', { key: app.ak, body: { connectionId } });
    expect(read.status, read.text).to.equal(200);
    const refused = await api.request('GET', `/api/sdk/v1/fhir/connections/${connectionId}/Condition`, { key: app.ak });
    expect(refused.status, refused.text).to.equal(403);

    const html = await pageOf(await open('portal-page'));
    expect(html).to.include(`<span>${brandName.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)}</span>`);
    expect(html).to.include('Shared with Connect test app until you stop sharing.');
    expect(html).to.include('<li>Lab results and vital signs</li><li>Medications</li>');
    expect(html).to.include('Connect test app read 2 lab results and vital signs from');
    expect(html).to.include('Connect test app was refused your conditions (health problems) from');
    expect(html).to.include('3 December 2026, 14:');
    expect(html).not.to.include('187');
    expect(html).not.to.include('8867-4');
  });

  it('downloads the access log as a FHIR Bundle of AuditEvents', async () => {
    const connectionId = await connectionOf(api, tenant, app, 'portal-export', brandId);
    await api.request('POST', '/api/sdk/v1/observations/_search', { key: app.ak, body: { connectionId } });
    const exported = await visit('/api/sdk/v1/portal/access-log.json', await open('portal-export'));
    expect(exported.status).to.equal(200);
    expect(exported.headers.get('content-type')).to.match(/^application\/fhir\+json/);
    expect(exported.headers.get('content-disposition')).to.equal('attachment; filename="access-log.json"');
    const bundle = (await exported.json()) as any;
    expect(bundle).to.include({ resourceType: 'Bundle', type: 'collection' });
    expect(bundle.entry).to.have.length(1);
    expect(bundle.entry[0].resource).to.include({ resourceType: 'AuditEvent', outcome: '0', action: 'E' });
    expect(bundle.entry[0].fullUrl).to.equal(`urn:uuid:${bundle.entry[0].resource.id}`);
  });

  it('stops sharing as DELETE /connections/{id} does, the event saying the patient did', async () => {
    const kept = await connectionOf(api, tenant, app, 'portal-stop', brandId);
    const cookie = await open('portal-stop');
    const html = await pageOf(cookie);
    const action = /<form method="post" action="([^"]+)"/.exec(html)![1]!.replace(/&#38;/g, '&');
    expect(action).to.match(new RegExp(`^/api/sdk/v1/portal/connections/${kept}/stop\\?token=`));

    // A form without the page's token, or from a browser without the page's cookie, changes nothing.
    const tokenless = await visit(action.replace(/\?token=.*$/, '?token=forged'), cookie, 'POST');
    expect(tokenless.status).to.equal(303);
    expect(tokenless.headers.get('location')).to.equal('/api/sdk/v1/portal?stopped=no');
    expect((await visit(action, undefined, 'POST')).status).to.equal(410);
    const elsewhere = await connectionOf(api, tenant, app, 'portal-someone-else', brandId);
    const foreign = await visit(action.replace(kept, elsewhere), cookie, 'POST');
    expect(foreign.headers.get('location')).to.equal('/api/sdk/v1/portal?stopped=no');
    expect(
      (await api.request('GET', '/api/platform/v1/app-users/portal-someone-else', { key: tenant.key })).body
        .connections,
    ).to.have.length(1);

    const stopped = await visit(action, cookie, 'POST');
    expect(stopped.status).to.equal(303);
    expect(stopped.headers.get('location')).to.equal('/api/sdk/v1/portal?stopped=yes');
    const after = await visit('/api/sdk/v1/portal?stopped=yes', cookie);
    const text = await after.text();
    expect(text).to.include('Sharing stopped.');
    expect(text).to.include('You are not sharing records from any health system.');
    const user = await api.request('GET', '/api/platform/v1/app-users/portal-stop', { key: tenant.key });
    expect(user.body).to.include({ state: 'LIMITED' });
    expect(user.body.connections).to.deep.equal([]);
    const revoked = (await eventsOf(api.mongo.db, tenant.accountId)).filter(
      (e) => e.type === 'connection.revoked' && e.data.connectionId === kept,
    );
    expect(revoked.map((e) => e.data)).to.deep.equal([
      { connectionId: kept, appUserId: 'portal-stop', brandId, by: 'patient' },
    ]);
    // Again: nothing more happens.
    expect((await visit(action, cookie, 'POST')).headers.get('location')).to.equal('/api/sdk/v1/portal?stopped=no');
  });

  it("lets no other account mint a link for a user it does not own, nor stop that user's sharing", async () => {
    const connectionId = await connectionOf(api, tenant, app, 'portal-isolated', brandId);
    const stranger = await mint('portal-isolated', other.key);
    expect(stranger.status, stranger.text).to.equal(404);
    // The other account's own user, and its page: A's connection cannot be stopped from it.
    const otherApp = await appOf(api, other);
    await connectionOf(api, other, otherApp, 'portal-isolated', brandId);
    const minted = await mint('portal-isolated', other.key);
    const opened = await visit(minted.body.url);
    const cookie = opened.headers.getSetCookie()[0]!.split(';')[0]!;
    const html = await pageOf(cookie);
    const token = /\?token=([^"]+)"/.exec(html)![1]!;
    const attempt = await visit(`/api/sdk/v1/portal/connections/${connectionId}/stop?token=${token}`, cookie, 'POST');
    expect(attempt.headers.get('location')).to.equal('/api/sdk/v1/portal?stopped=no');
    const user = await api.request('GET', '/api/platform/v1/app-users/portal-isolated', { key: tenant.key });
    expect(user.body.connections.map((c: { id: string }) => c.id)).to.deep.equal([connectionId]);
  });

  it('needs app_user:write and a user the account has seen', async () => {
    expect((await mint('portal-never-seen')).status).to.equal(404);
  });
});
