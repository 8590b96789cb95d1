// The whole journey of a customer's integration, against a running Portico (docs/api.md), as one script:
// account → secret key → webhook endpoint (a local receiver, ./receiver.mjs) → patient → app → an app user
// connected by the app's backend → another who signs in at their health system (the sandbox EHR) → the probe
// (200, then 304) → clinical ingest → FHIR search of the connection (fhir-kit-client) → revoke, each step checked.
// Run it beside `npm start` (which also runs the sandbox EHR, docs/connecting.md):
//
//   PORTICO_ADMIN_TOKEN=change-me-to-a-long-secret PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS=true npm start
//   PORTICO_ADMIN_TOKEN=change-me-to-a-long-secret npx node examples/end-to-end/walk.mjs
//
// (PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS lets the API deliver to the receiver on your machine; never in production.)
// PORTICO_URL (default http://127.0.0.1:8080) says where the API is. The tests run this file, so it keeps working.
import { randomUUID } from 'node:crypto';
import { Client } from 'fhir-kit-client';
import { startReceiver } from './receiver.mjs';

const BASE = process.env.PORTICO_URL ?? 'http://127.0.0.1:8080';
const ADMIN = process.env.PORTICO_ADMIN_TOKEN;
if (!ADMIN) throw new Error('set PORTICO_ADMIN_TOKEN to the token the API was started with');
/** Where patients' browsers come back to the app. Nothing needs to listen there: this script reads the address. */
const RETURN = 'http://localhost:3000/connected';

/** One request; its JSON body, or an error naming the step, the status and the problem's detail. */
async function call(step, method, path, { key, body, headers = {}, expect = [200, 201, 202, 204] } = {}) {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: {
      ...(key && { authorization: `Bearer ${key}` }),
      ...(body && { 'content-type': 'application/json' }),
      ...(method === 'POST' && { 'idempotency-key': randomUUID() }),
      ...headers,
    },
    ...(body && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!expect.includes(res.status)) throw new Error(`${step}: ${method} ${path} answered ${res.status}: ${text}`);
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}
const done = (step, detail) => console.log(`✔ ${step}: ${detail}`);

/**
 * What the patient's browser does with an authorizeUrl, over plain HTTP: Portico shows its consent page, and its
 * Continue link (with the cookie the page set) answers 302 to the health system's sign-in page and sets a cookie
 * that binds the sign-in to this browser; the patient signs in and allows; the health system sends the browser to
 * Portico's callback, which refuses a browser without that cookie; then Portico sends the browser back to the app
 * (303). A browser carries the cookies by itself; here they are carried by hand. Returns the URL the app is sent to.
 */
async function signInAsPatient(authorizeUrl, { username, password }) {
  const consent = await fetch(authorizeUrl, { redirect: 'manual' });
  const continueTo = /id="continue" href="([^"]+)"/.exec(await consent.text())?.[1]?.replaceAll('&#38;', '&');
  if (consent.status !== 200 || !continueTo) throw new Error(`sign in: no consent page (${consent.status})`);
  const launched = await fetch(new URL(continueTo, authorizeUrl), {
    redirect: 'manual',
    headers: { cookie: consent.headers.getSetCookie()[0].split(';')[0] }, // portico-consent=…
  });
  if (launched.status !== 302) throw new Error(`sign in: authorizeUrl answered ${launched.status}`);
  const cookie = launched.headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .filter((pair) => !pair.endsWith('=')); // portico-connect=… (the consent cookie's deletion left out)
  const signInPage = new URL(launched.headers.get('location'));
  const form = await (await fetch(signInPage)).text();
  const requestId = /name="id" value="([^"]+)"/.exec(form)?.[1];
  if (!requestId) throw new Error(`sign in: no sign-in form at ${signInPage.origin}`);
  const allowed = await fetch(new URL('authorize', signInPage), {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ id: requestId, username, password, decision: 'allow' }),
  });
  if (allowed.status !== 302) throw new Error(`sign in: the health system answered ${allowed.status}`);
  const callback = allowed.headers.get('location'); // Portico's callback, with the code and state
  const back = await fetch(callback, { redirect: 'manual', headers: { cookie: cookie.join('; ') } });
  if (back.status !== 303) throw new Error(`sign in: the callback answered ${back.status}: ${await back.text()}`);
  return new URL(back.headers.get('location'));
}

const receiver = await startReceiver();
try {
  const account = (
    await call('account', 'POST', '/api/admin/v1/customer-accounts', {
      key: ADMIN,
      body: { name: 'Walkthrough Health' },
    })
  ).body;
  done('account', account.id);
  const scopes = [
    'patient:read',
    'patient:write',
    'webhook:read',
    'webhook:write',
    'app_user:read',
    'app_user:write',
    'clinical:write',
  ];
  const sk = (
    await call('key', 'POST', `/api/admin/v1/customer-accounts/${account.id}/api-keys`, {
      key: ADMIN,
      body: { scopes },
    })
  ).body.key;
  done('secret key', `${sk.slice(0, 6)}… with ${scopes.join(' ')}`);

  const endpoint = (
    await call('webhook endpoint', 'POST', '/api/platform/v1/webhook-endpoints', {
      key: sk,
      body: { url: receiver.url, eventTypes: ['*'] },
    })
  ).body;
  receiver.secret = endpoint.secret;
  done('webhook endpoint', `${endpoint.id} → ${receiver.url}`);

  const patient = (
    await call('patient', 'POST', '/api/platform/v1/patients', {
      key: sk,
      body: { givenName: 'Ada', familyName: 'Lovelace', birthDate: '1815-12-10' },
    })
  ).body;
  const created = await receiver.waitFor('patient.created');
  done('patient', `${patient.id}; webhook ${created.type} verified (data ${JSON.stringify(created.data)})`);

  const grants = {
    resourceTypes: ['Observation'],
    loincCodes: ['*'],
    confidentiality: ['N'],
    sensitivity: [],
    lookbackDays: null,
  };
  const app = (
    await call('app', 'POST', `/api/admin/v1/customer-accounts/${account.id}/apps`, {
      key: ADMIN,
      body: { name: 'Companion', grants, redirectUris: [RETURN] },
    })
  ).body;
  done('app', `${app.id}: publishable ${app.publishableKey.slice(0, 6)}…, secret ${app.secretKey.slice(0, 6)}…`);

  const brand = (await call('catalog', 'GET', '/api/sdk/v1/catalog/brands?q=health&limit=1')).body.brands[0];
  if (!brand) throw new Error('catalog: no brand matches "health": publish a catalog first');
  const appUserId = `walk-${randomUUID().slice(0, 8)}`;
  const session = (
    await call('initiate', 'POST', '/api/sdk/v1/connect-sessions', {
      key: app.publishableKey,
      body: { appUserId, brandId: brand.id },
    })
  ).body;
  const { connection } = (
    await call('complete', 'POST', `/api/platform/v1/connect-sessions/${session.id}/complete`, { key: sk })
  ).body;
  done('connect', `${appUserId} to ${brand.name}: connection ${connection.id}`);

  // Another app user connects by signing in at their health system: the sandbox EHR (sign in as ada / sandbox).
  // The publishable key is public, so it cannot start a sign-in alone: the app's backend mints a link token for
  // its user with the secret key, and the app's page initiates with it (or passes it to the SDK's connect()).
  const sandbox = (await call('catalog', 'GET', '/api/sdk/v1/catalog/brands?q=portico%20sandbox%20health')).body
    .brands[0];
  if (sandbox?.name !== 'Portico Sandbox Health') throw new Error('sign in: no sandbox EHR (npm start runs it)');
  const signedInUserId = `walk-${randomUUID().slice(0, 8)}`;
  const { linkToken } = (
    await call('link token', 'POST', '/api/platform/v1/link-tokens', {
      key: sk,
      body: { appUserId: signedInUserId, appId: app.id, redirectUri: RETURN },
    })
  ).body;
  const launch = (
    await call('initiate', 'POST', '/api/sdk/v1/connect-sessions', {
      key: app.publishableKey,
      body: { appUserId: signedInUserId, brandId: sandbox.id, redirectUri: RETURN, linkToken },
    })
  ).body;
  const back = await signInAsPatient(launch.authorizeUrl, { username: 'ada', password: 'sandbox' });
  if (back.searchParams.get('status') !== 'connected') throw new Error(`sign in: back at the app with ${back}`);
  // The address the browser comes back to is a hint; the backend confirms with the platform API (or a webhook).
  const signedIn = (await call('sign in', 'GET', `/api/platform/v1/app-users/${signedInUserId}`, { key: sk })).body;
  if (signedIn.state !== 'ACTIVE') throw new Error(`sign in: the app user is ${signedIn.state}, expected ACTIVE`);
  done('sign in', `${signedInUserId} signed in at ${sandbox.name}: ${signedIn.state}, ${back.search}`);

  const probePath = `/api/sdk/v1/app-users/${appUserId}/lifecycle`;
  const probe = await call('probe', 'GET', probePath, { key: app.publishableKey });
  if (probe.body.state !== 'ACTIVE') throw new Error(`probe: state ${probe.body.state}, expected ACTIVE`);
  const again = await call('probe again', 'GET', probePath, {
    key: app.publishableKey,
    headers: { 'if-none-match': probe.headers.get('etag') },
    expect: [304],
  });
  done('probe', `${probe.body.state}, then ${again.status} while it stays so`);

  const observation = (id, code, display, value, unit, date) => ({
    resource: {
      resourceType: 'Observation',
      id,
      status: 'final',
      category: [
        { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] },
      ],
      code: { coding: [{ system: 'http://loinc.org', code, display }] },
      effectiveDateTime: date,
      valueQuantity: { value, unit, system: 'http://unitsofmeasure.org', code: unit },
    },
  });
  const bundle = {
    resourceType: 'Bundle',
    type: 'collection',
    entry: [
      observation('hr-1', '8867-4', 'Heart rate', 72, '/min', '2024-03-05T08:30:00Z'),
      observation('hr-2', '8867-4', 'Heart rate', 68, '/min', '2025-01-10T09:00:00Z'),
      observation('temp-1', '8310-5', 'Body temperature', 36.8, 'Cel', '2025-01-10T09:00:00Z'),
    ],
  };
  const ingested = (
    await call('ingest', 'POST', `/api/platform/v1/connections/${connection.id}/observations`, {
      key: sk,
      body: bundle,
    })
  ).body;
  done('ingest', JSON.stringify(ingested));

  const fhir = new Client({
    baseUrl: `${BASE}/api/sdk/v1/fhir/connections/${connection.id}`,
    bearerToken: app.secretKey,
  });
  const found = await fhir.search({
    resourceType: 'Observation',
    searchParams: { code: 'http://loinc.org|8867-4', _sort: 'date' },
  });
  const ids = found.entry.map((entry) => entry.resource.id);
  if (found.total !== 2 || ids.join() !== 'hr-1,hr-2') throw new Error(`FHIR search: ${found.total} found, ${ids}`);
  const read = await fhir.read({ resourceType: 'Observation', id: 'temp-1' });
  done('FHIR search', `${found.total} heart rates (${ids.join(', ')}); read ${read.id} by id`);

  await call('revoke', 'DELETE', `/api/platform/v1/connections/${connection.id}`, { key: sk });
  const revoked = await receiver.waitFor('connection.revoked');
  const after = (await call('probe', 'GET', probePath, { key: app.publishableKey })).body.state;
  done('revoke', `webhook ${revoked.type} verified; the app user is ${after} again`);
  console.log(`events received: ${receiver.events.map((event) => event.type).join(', ')}`);
} finally {
  await receiver.close();
}
