// A world for the tests of connections to health systems: the sandbox EHR on a loopback port with one brand per
// way of authenticating (a public client on a SMART v2 server and on a v1-only one, client_secret_basic,
// private_key_jwt with ES384 and with RS384), a Portico API holding the matching client registrations, the
// brands in its catalog, a tenant, an app with a redirect URI, and the steps a patient's browser takes.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { exportJWK, generateKeyPair } from 'jose';
import type { PlatformType } from '#core/catalog/model.js';
import { startSandboxEhr, type SandboxClient, type SandboxEhr, type SandboxPatient } from '../sandbox/src/server.js';
import { TestApi, type Tenant, type TestApiOptions } from './api.js';
import { appOf, type AppKeys } from './apps.js';
import { publishTo } from './catalog.js';
import { sandboxSources } from './sandbox-catalog.js';
import { signIn, type SignInOptions } from './sandbox-ehr.js';

export const TOKEN_KEY_1 = `k1:${Buffer.alloc(32, 1).toString('base64')}`;
export const TOKEN_KEY_2 = `k2:${Buffer.alloc(32, 2).toString('base64')}`;
export const APP_RETURN = 'https://app.example.com/connected?from=portico';

export const SMART_BRANDS = [
  { key: 'public-v2', name: 'Sandbox Public Health', platformType: 'OTHER' as PlatformType, client: 'portico-public' },
  {
    key: 'public-v1',
    name: 'Sandbox Legacy Clinic',
    platformType: 'MEDITECH' as PlatformType,
    client: 'portico-public',
    v2: false,
  },
  { key: 'secret', name: 'Sandbox Secret Hospital', platformType: 'CERNER' as PlatformType, client: 'portico-secret' },
  { key: 'jwt-es', name: 'Sandbox Elliptic Medical', platformType: 'EPIC' as PlatformType, client: 'portico-jwt-es' },
  {
    key: 'jwt-rs',
    name: 'Sandbox Rivest Care',
    platformType: 'ATHENAHEALTH' as PlatformType,
    client: 'portico-jwt-rs',
  },
  // No registration matches it: not connectable.
  { key: 'unregistered', name: 'Sandbox Stranger Clinic', platformType: 'NEXTGEN' as PlatformType, client: 'none' },
];
export type SmartBrandKey = (typeof SMART_BRANDS)[number]['key'];

export const PATIENTS: SandboxPatient[] = [
  { id: 'ada', username: 'ada', password: 'sandbox', name: 'Ada Lovelace', birthDate: '1815-12-10', observations: 230 },
  {
    id: 'grace',
    username: 'grace',
    password: 'sandbox',
    name: 'Grace Hopper',
    birthDate: '1906-12-09',
    observations: 40,
  },
];

export interface SmartWorld {
  api: TestApi;
  ehr: SandboxEhr;
  tenant: Tenant;
  app: AppKeys;
  /** Brand ids in the API's catalog, by sandbox brand key. */
  brands: Record<string, string>;
  registrationsFile: string;
  /** Another API replica on the same database, with the same registrations (closed with the world). */
  replica(options?: TestApiOptions & { tokenKeys?: string }): Promise<TestApi>;
  close(): Promise<void>;
}

export async function startSmartWorld(
  options: TestApiOptions & {
    now?: () => number;
    tokenKeys?: string;
    /** The sandbox's patients (PATIENTS when absent). */
    patients?: SandboxPatient[];
    /** Every registration's per-type searches (SmartRegistration.searches). */
    searches?: Record<string, string[]>;
    /** The world app's grants (GRANTS when absent). */
    grants?: Record<string, unknown>;
    /** The world app's name, as the consent page shows it. */
    appName?: string;
  } = {},
): Promise<SmartWorld> {
  const es = await generateKeyPair('ES384', { extractable: true });
  const rs = await generateKeyPair('RS384', { extractable: true });
  const jwk = async (key: Parameters<typeof exportJWK>[0], kid: string, alg: string) => ({
    ...(await exportJWK(key)),
    kid,
    alg,
  });
  const clients: SandboxClient[] = [
    { clientId: 'portico-public', redirectUris: [], auth: { method: 'none' } },
    { clientId: 'portico-secret', redirectUris: [], auth: { method: 'client_secret_basic', secret: 's3cr3t-value' } },
    {
      clientId: 'portico-jwt-es',
      redirectUris: [],
      auth: { method: 'private_key_jwt', jwks: [await jwk(es.publicKey, 'es-1', 'ES384')] },
    },
    {
      clientId: 'portico-jwt-rs',
      redirectUris: [],
      auth: { method: 'private_key_jwt', jwks: [await jwk(rs.publicKey, 'rs-1', 'RS384')] },
    },
  ];
  const ehr = await startSandboxEhr({
    brands: SMART_BRANDS.map(({ key, name, v2 }) => ({ key, name, v2: v2 !== false })),
    clients,
    patients: options.patients ?? PATIENTS,
    ...(options.now && { now: options.now }),
  });
  // Vendor-wide registrations (by platform type), as production's are: each pins the hosts its brands' endpoints
  // may be on, here the sandbox's.
  const endpointHosts = ['127.0.0.1'];
  const registrations = [
    { match: { platformType: 'OTHER' }, clientId: 'portico-public', endpointHosts },
    { match: { platformType: 'MEDITECH' }, clientId: 'portico-public', endpointHosts },
    { match: { platformType: 'CERNER' }, clientId: 'portico-secret', clientSecret: 's3cr3t-value', endpointHosts },
    {
      match: { platformType: 'EPIC' },
      clientId: 'portico-jwt-es',
      privateKeyJwk: await jwk(es.privateKey, 'es-1', 'ES384'),
      endpointHosts,
    },
    {
      match: { platformType: 'ATHENAHEALTH' },
      clientId: 'portico-jwt-rs',
      privateKeyJwk: await jwk(rs.privateKey, 'rs-1', 'RS384'),
      endpointHosts,
    },
  ];
  const registrationsFile = path.join(os.tmpdir(), `portico-smart-clients-${randomUUID()}.json`);
  writeFileSync(
    registrationsFile,
    JSON.stringify(registrations.map((r) => ({ ...r, ...(options.searches && { searches: options.searches }) }))),
  );
  const api = await TestApi.start({
    sync: true,
    ...options,
    env: {
      PORTICO_SMART_CLIENTS: registrationsFile,
      PORTICO_SMART_ALLOW_INSECURE: 'true',
      PORTICO_TOKEN_KEYS: options.tokenKeys ?? TOKEN_KEY_1,
      ...options.env,
    },
  });
  for (const client of clients) client.redirectUris.push(`${api.url}/api/sdk/v1/connect/callback`);
  await publishTo(api, sandboxSources(ehr.origin, SMART_BRANDS));
  const brands: Record<string, string> = {};
  for (const brand of SMART_BRANDS) {
    const search = await api.request('GET', `/api/sdk/v1/catalog/brands?q=${encodeURIComponent(brand.name)}`);
    const found = (search.body?.data ?? search.body?.brands ?? []).find(
      (b: { fhirBaseUrl: string }) => b.fhirBaseUrl === ehr.fhirBaseUrl(brand.key),
    );
    if (!found) throw new Error(`the catalog has no brand for ${brand.key}: ${search.text.slice(0, 300)}`);
    brands[brand.key] = found.id;
  }
  const tenant = await api.tenant();
  const app = await appOf(api, tenant, options.grants, options.appName);
  const patched = await api.admin('PATCH', `/apps/${app.appId}`, { redirectUris: [APP_RETURN] });
  expect(patched.status, patched.text).to.equal(200);
  const replicas: TestApi[] = [];
  return {
    api,
    ehr,
    tenant,
    app,
    brands,
    registrationsFile,
    replica: async (more = {}) => {
      const replica = await TestApi.start({
        // The same time as the first replica (leases and claims compare clocks across replicas).
        ...(options.clock && { clock: options.clock }),
        ...more,
        replicaOf: api,
        env: {
          PORTICO_SMART_CLIENTS: registrationsFile,
          PORTICO_SMART_ALLOW_INSECURE: 'true',
          PORTICO_TOKEN_KEYS: more.tokenKeys ?? options.tokenKeys ?? TOKEN_KEY_1,
          ...more.env,
        },
      });
      replicas.push(replica);
      return replica;
    },
    close: async () => {
      for (const replica of replicas) await replica.close().catch(() => {});
      await api.close();
      await ehr.close();
    },
  };
}

/** What the app's backend does first: a link token for the user (binding what `bind` adds), from the secret key. */
export async function mintLinkToken(
  world: Pick<SmartWorld, 'api' | 'tenant' | 'app'>,
  appUserId: string,
  bind: Record<string, unknown> = {},
): Promise<string> {
  const minted = await world.api.request('POST', '/api/platform/v1/link-tokens', {
    key: world.tenant.key,
    body: { appUserId, appId: world.app.appId, redirectUri: APP_RETURN, ...bind },
  });
  expect(minted.status, minted.text).to.equal(201);
  return minted.body.linkToken;
}

/**
 * Initiates a session with a redirect URI, as the app's page does with the link token its backend minted (binding
 * the brand, and the connection when `extra` reconnects one); its 201 body (with authorizeUrl).
 */
export async function initiateLaunch(
  world: SmartWorld,
  brandKey: string,
  appUserId: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; authorizeUrl: string }> {
  const brandId = world.brands[brandKey];
  const linkToken = await mintLinkToken(world, appUserId, {
    brandId,
    ...(extra['connectionId'] !== undefined && { connectionId: extra['connectionId'] }),
  });
  const started = await world.api.request('POST', '/api/sdk/v1/connect-sessions', {
    key: world.app.pk,
    body: { appUserId, brandId, redirectUri: APP_RETURN, linkToken, ...extra },
  });
  expect(started.status, started.text).to.equal(201);
  expect(started.body.authorizeUrl).to.be.a('string');
  return started.body;
}

/**
 * A browser's cookies, as far as these tests need them: what Set-Cookie answers gave, sent back to the same host
 * (path `/`; Max-Age=0 deletes). Each test's patient is one jar; another jar is another browser.
 */
export class CookieJar {
  private readonly cookies = new Map<string, Map<string, string>>();

  header(url: string): string | undefined {
    const jar = this.cookies.get(new URL(url).host);
    return jar && jar.size > 0 ? [...jar].map(([name, value]) => `${name}=${value}`).join('; ') : undefined;
  }

  take(url: string, response: Response): void {
    const host = new URL(url).host;
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const at = pair.indexOf('=');
      const jar = this.cookies.get(host) ?? new Map<string, string>();
      this.cookies.set(host, jar);
      if (attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || pair.slice(at + 1) === '')
        jar.delete(pair.slice(0, at));
      else jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
  }
}

/** GET without following redirects, as the browser holding `jar` (a new one when none); the status and Location. */
export async function visit(
  url: string,
  jar: CookieJar = new CookieJar(),
): Promise<{ status: number; location: URL | null; text: string; setCookie: string[] }> {
  const cookie = jar.header(url);
  const res = await fetch(url, { redirect: 'manual', ...(cookie && { headers: { cookie } }) });
  jar.take(url, res);
  const location = res.headers.get('location');
  return {
    status: res.status,
    location: location ? new URL(location, url) : null,
    text: await res.text(),
    setCookie: res.headers.getSetCookie(),
  };
}

/** The href of the consent page's Continue (or "Don't share") link, resolved against the page's URL. */
export function consentLink(page: { text: string }, url: string, answer: 'continue' | 'decline' = 'continue'): URL {
  const link = new RegExp(`<a [^>]*id="${answer}" href="([^"]+)"`).exec(page.text);
  if (!link) throw new Error(`no ${answer} link on the page: ${page.text.slice(0, 300)}`);
  return new URL(link[1]!.replaceAll('&#38;', '&'), url);
}

/**
 * The patient on the consent page: visits `url` (authorizeUrl, or the picker's choice), which must answer the
 * consent page and its cookie, then follows its Continue (or "Don't share") link in the same browser; that visit.
 */
export async function throughConsent(
  url: string,
  jar: CookieJar,
  answer: 'continue' | 'decline' = 'continue',
): ReturnType<typeof visit> {
  const page = await visit(url, jar);
  expect(page.status, page.text).to.equal(200);
  expect(page.text).to.include('<h1>Share your records with');
  expect(page.setCookie.join('\n')).to.match(/portico-consent=[A-Za-z0-9_-]{43};/);
  return visit(consentLink(page, url, answer).href, jar);
}

/** The whole browser path: authorizeUrl → the consent page → the EHR's sign-in → Portico's callback → where the app is sent. */
export async function connectThroughBrowser(
  world: SmartWorld,
  brandKey: string,
  appUserId: string,
  signInAs: SignInOptions = {},
  extra: Record<string, unknown> = {},
): Promise<{ session: string; back: URL; callback: URL }> {
  const { id, authorizeUrl } = await initiateLaunch(world, brandKey, appUserId, extra);
  const browser = new CookieJar();
  const launched = await throughConsent(authorizeUrl, browser);
  expect(launched.status, launched.text).to.equal(302);
  const callback = await signIn(launched.location!.href, signInAs);
  const back = await visit(callback.href, browser);
  expect(back.status, back.text).to.equal(303);
  return { session: id, back: back.location!, callback };
}

/** Waits until `check` holds (or fails the test after `timeoutMs`), polling: never a fixed sleep. */
export async function until<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: last ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
