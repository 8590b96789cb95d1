// Two tenants built the way customers build them, through the API, for the tenant-isolation matrix
// (test/api/isolation-matrix.test.ts): accounts, secret keys, apps, patients, webhook endpoints pointing at
// a loopback receiver, app users, connect sessions, connections, ingested observations, cursors. Every
// identifier, name, e-mail, URL and secret of a tenant is remembered as one of its markers, and every free
// text carries `leakmark-<tenant>-…`, so a response can be searched for another tenant's data.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { parseSource, type LoadedSource } from '../operator/src/pipeline/index.js';
import { ALL_SCOPES, type Response, type TestApi } from './api.js';
import { GRANTS } from './apps.js';
import { publishTo, realSources } from './catalog.js';
import { heartRate, glucose, observationBundle } from './observations.js';
import type { Receiver } from './receivers.js';
import { tokensOfValue } from './isolation-scan.js';

/** Where every matrix app sends patients back (the link tokens' cells). */
export const MATRIX_RETURN = 'https://app.example.test/connected';

/** An observation id every tenant's shared connection holds (the FHIR read's cells). */
export const MATRIX_OBSERVATION = 'matrix-obs';
/** A Condition with the same id in every tenant's shared connection: what the record read asks for. */
export const MATRIX_CONDITION = 'matrix-condition';
/** The patient of every tenant's shared connection's records (what `$everything` asks for). */
export const MATRIX_PATIENT = 'matrix-patient';
/** The attachment of every tenant's shared connection's note (what the Binary read asks for). */
export const MATRIX_BINARY = 'matrix-binary';

/** A Condition of the patient (ingested through `POST /connections/{id}/resources`). */
export function conditionOf(id: string, patient: string) {
  return {
    resourceType: 'Condition',
    id,
    subject: { reference: `Patient/${patient}` },
    code: { coding: [{ system: 'http://snomed.info/sct', code: '44054006' }] },
    recordedDate: '2024-05-01',
  };
}

export type TenantName = 'A' | 'B';
export const TENANTS: TenantName[] = ['A', 'B'];

/** A marker token: recognisable in any body or header, valid in names, e-mails, URLs, app user and FHIR ids. */
export const marker = (tenant: TenantName | 'C', what: string): string =>
  `leakmark-${tenant.toLowerCase()}-${what}-${randomBytes(4).toString('hex')}`;

export interface AppCredentials {
  appId: string;
  pk: string;
  pkId: string;
  ak: string;
  akId: string;
}

export interface TenantData {
  name: TenantName;
  accountId: string;
  /** A secret key with every platform scope. */
  sk: string;
  /** Keys of the account that hold every platform scope but one: `lacking[scope]`. */
  lacking: Record<string, string>;
  app: AppCredentials;
  /** A second app of the same account (another app's ak_ must not reach this app's connections). */
  sibling: AppCredentials;
  /** The resources read-only cells share, each live and deleted where that exists. */
  shared: Record<string, { live?: string; deleted?: string }>;
  /** The shared live webhook endpoint's signing secret and receiver path (deliveries must verify with it). */
  endpoint: { id: string; secret: string; path: string; snapshot: Record<string, unknown> };
  /** The shared live app user, its connection, and what a search of it returns. */
  user: { appUserId: string; connectionId: string; total: number };
  patientSnapshot: Record<string, unknown>;
}

/** Credentials that must open nothing: revoked ones of tenant A, and every kind of a suspended account's. */
export interface Strangers {
  revoked: { sk: string; ak: string };
  suspended: { accountId: string; sk: string; pk: string; ak: string };
}

export interface World {
  api: TestApi;
  strangers: Strangers;
  receiver: Receiver;
  tenants: Record<TenantName, TenantData>;
  /** A brand to connect to, a brand with artwork, a brand that was in an earlier snapshot only, an asset key. */
  brands: { connect: string; withLogo: string; removed: string; assetKey: string };
  /** The tokens (UUIDs, keys, secrets, markers) of every identifier, name, e-mail, URL and secret of each tenant (C:
   * the suspended one). */
  markers: Record<TenantName | 'C', Set<string>>;
  remember(tenant: TenantName | 'C', ...values: (string | undefined | null)[]): void;
}

const PLATFORM = '/api/platform/v1';
const SDK = '/api/sdk/v1';

function ok(res: Response, status: number, what: string): void {
  expect(res.status, `${what}: ${res.text}`).to.equal(status);
}

/** Fresh resources of one tenant, made through the API: each call makes a new one. */
export class Factory {
  constructor(
    private readonly world: World,
    readonly tenant: TenantData,
  ) {}

  private get api(): TestApi {
    return this.world.api;
  }

  private remember(...values: (string | undefined | null)[]): void {
    this.world.remember(this.tenant.name, ...values);
  }

  async patient(deleted = false): Promise<string> {
    const t = this.tenant.name;
    const body = {
      givenName: marker(t, 'given'),
      familyName: marker(t, 'family'),
      birthDate: '1984-02-29',
      sex: 'female',
      email: `${marker(t, 'mail')}@example.org`,
      phoneNumber: '+14155550123',
      preferredLanguage: 'es-MX',
    };
    const res = await this.api.request('POST', `${PLATFORM}/patients`, { key: this.tenant.sk, body });
    ok(res, 201, 'create patient');
    this.remember(res.body.id, body.givenName, body.familyName, body.email);
    if (deleted)
      ok(
        await this.api.request('DELETE', `${PLATFORM}/patients/${res.body.id}`, { key: this.tenant.sk }),
        204,
        'delete patient',
      );
    return res.body.id;
  }

  /** A webhook endpoint on the loopback receiver, at a path of its own under /hooks/<tenant>/. */
  async endpoint(deleted = false): Promise<{ id: string; secret: string; path: string }> {
    const t = this.tenant.name;
    const path = `/hooks/${t.toLowerCase()}/${marker(t, 'hook')}`;
    const body = { url: this.world.receiver.url(path), eventTypes: ['*'], description: marker(t, 'description') };
    const res = await this.api.request('POST', `${PLATFORM}/webhook-endpoints`, { key: this.tenant.sk, body });
    ok(res, 201, 'create webhook endpoint');
    this.remember(res.body.id, body.url, path, body.description, res.body.secret);
    if (deleted)
      ok(
        await this.api.request('DELETE', `${PLATFORM}/webhook-endpoints/${res.body.id}`, { key: this.tenant.sk }),
        204,
        'delete endpoint',
      );
    return { id: res.body.id, secret: res.body.secret, path };
  }

  /** Initiates a connect session for `appUserId` (provisioning it LIMITED) through `app`. */
  async session(
    appUserId = marker(this.tenant.name, 'user'),
    app = this.tenant.app,
  ): Promise<{ sessionId: string; appUserId: string }> {
    const res = await this.api.request('POST', `${SDK}/connect-sessions`, {
      key: app.pk,
      body: { appUserId, brandId: this.world.brands.connect },
    });
    ok(res, 201, 'initiate connect session');
    this.remember(res.body.id, appUserId);
    return { sessionId: res.body.id, appUserId };
  }

  /** A connection: initiate, then complete (the user becomes ACTIVE). */
  async connection(
    appUserId?: string,
    app = this.tenant.app,
  ): Promise<{ sessionId: string; appUserId: string; connectionId: string }> {
    const session = await this.session(appUserId, app);
    const done = await this.api.request('POST', `${PLATFORM}/connect-sessions/${session.sessionId}/complete`, {
      key: this.tenant.sk,
    });
    ok(done, 200, 'complete connect session');
    this.remember(done.body.connection.id);
    return { ...session, connectionId: done.body.connection.id };
  }

  async revokedConnection(): Promise<string> {
    const { connectionId } = await this.connection();
    ok(
      await this.api.request('DELETE', `${PLATFORM}/connections/${connectionId}`, { key: this.tenant.sk }),
      204,
      'revoke connection',
    );
    return connectionId;
  }

  /** An ACTIVE app user (one live connection), or a tombstoned one. */
  async appUser(deleted = false): Promise<string> {
    const { appUserId } = await this.connection();
    if (deleted)
      ok(
        await this.api.request('DELETE', `${PLATFORM}/app-users/${appUserId}`, { key: this.tenant.sk }),
        204,
        'tombstone app user',
      );
    return appUserId;
  }

  /** A LIMITED app user (initiated, never connected), or a tombstoned one. */
  async initiatedUser(deleted = false): Promise<string> {
    const { appUserId } = await this.session();
    if (deleted)
      ok(
        await this.api.request('DELETE', `${PLATFORM}/app-users/${appUserId}`, { key: this.tenant.sk }),
        204,
        'tombstone app user',
      );
    return appUserId;
  }

  /** A pending connect session, or a completed one. */
  async pendingSession(completed = false): Promise<string> {
    if (completed) return (await this.connection()).sessionId;
    return (await this.session()).sessionId;
  }

  /** Observations with marked ids and texts (or the ids given, first), ingested into a connection. */
  async ingest(connectionId: string, count: number, ids: string[] = []): Promise<void> {
    const t = this.tenant.name;
    const resources = Array.from({ length: count }, (_, i) => {
      const make = i % 2 === 0 ? heartRate : glucose;
      return make({
        id: ids[i] ?? marker(t, 'obs'),
        subject: { reference: `Patient/${marker(t, 'subject')}`, display: marker(t, 'display') },
        note: [{ text: marker(t, 'note') }],
      });
    });
    const res = await this.api.request('POST', `${PLATFORM}/connections/${connectionId}/observations`, {
      key: this.tenant.sk,
      body: observationBundle(resources),
    });
    ok(res, 200, 'ingest observations');
    const condition = await this.api.request('POST', `${PLATFORM}/connections/${connectionId}/resources`, {
      key: this.tenant.sk,
      body: {
        resourceType: 'Bundle',
        type: 'collection',
        entry: [
          { resource: { resourceType: 'Patient', id: MATRIX_PATIENT, gender: 'unknown' } },
          { resource: conditionOf(MATRIX_CONDITION, MATRIX_PATIENT) },
          // A note whose attachment a sync would have fetched (put in the attachment store below).
          {
            resource: {
              resourceType: 'DocumentReference',
              id: 'matrix-note',
              status: 'current',
              subject: { reference: `Patient/${MATRIX_PATIENT}` },
              content: [{ attachment: { contentType: 'text/plain', url: `Binary/${MATRIX_BINARY}` } }],
            },
          },
        ],
      },
      headers: { 'content-type': 'application/fhir+json' },
    });
    ok(condition, 200, 'ingest a condition');
    await this.api.services.attachments.put(connectionId, MATRIX_BINARY, {
      contentType: 'text/plain',
      data: Buffer.from(`note of ${t}`),
    });
    for (const r of resources)
      this.remember(
        // A given id is shared by every tenant: not a marker of this one.
        ...(ids.includes(r.id as string) ? [] : [r.id as string]),
        (r.subject as { reference: string; display: string }).reference,
        (r.subject as { display: string }).display,
        (r.note as { text: string }[])[0]!.text,
      );
  }

  /** A secret platform key of the account (for the admin revoke route), or one already revoked. */
  async apiKey(revoked = false): Promise<string> {
    const res = await this.api.admin('POST', `/customer-accounts/${this.tenant.accountId}/api-keys`, {
      scopes: ['patient:read'],
      name: marker(this.tenant.name, 'keyname'),
    });
    ok(res, 201, 'issue key');
    this.remember(res.body.id, res.body.key);
    if (revoked) ok(await this.api.admin('DELETE', `/api-keys/${res.body.id}`), 204, 'revoke key');
    return res.body.id;
  }

  /** The `next` cursor of a search of `connectionId` one observation at a time. */
  async searchCursor(connectionId: string): Promise<string> {
    const res = await this.api.request('POST', `${SDK}/observations/_search`, {
      key: this.tenant.app.ak,
      body: { connectionId, _count: 1 },
    });
    ok(res, 200, 'search');
    const next = (res.body.link as { relation: string; url: string }[]).find((l) => l.relation === 'next');
    expect(next, 'a next link').to.not.equal(undefined);
    return new URL(next!.url).searchParams.get('cursor')!;
  }
}

async function app(api: TestApi, world: World, tenant: TenantName | 'C', accountId: string): Promise<AppCredentials> {
  const name = marker(tenant, 'app');
  // Each app takes patients back to one address of its own (link tokens are minted for it).
  const res = await api.admin('POST', `/customer-accounts/${accountId}/apps`, {
    name,
    grants: { ...GRANTS, resourceTypes: ['Observation', 'Condition', 'DocumentReference'] },
    redirectUris: [MATRIX_RETURN],
  });
  ok(res, 201, 'create app');
  world.remember(
    tenant,
    res.body.id,
    name,
    res.body.publishableKey,
    res.body.publishableKeyId,
    res.body.secretKey,
    res.body.secretKeyId,
  );
  return {
    appId: res.body.id,
    pk: res.body.publishableKey,
    pkId: res.body.publishableKeyId,
    ak: res.body.secretKey,
    akId: res.body.secretKeyId,
  };
}

async function tenantOf(api: TestApi, world: World, name: TenantName): Promise<TenantData> {
  const accountName = marker(name, 'account');
  const account = await api.admin('POST', '/customer-accounts', { name: accountName });
  ok(account, 201, 'create account');
  const accountId = account.body.id as string;
  world.remember(name, accountId, accountName);
  const issue = async (scopes: string[]) => {
    const res = await api.admin('POST', `/customer-accounts/${accountId}/api-keys`, {
      scopes,
      name: marker(name, 'keyname'),
    });
    ok(res, 201, 'issue key');
    world.remember(name, res.body.id, res.body.key);
    return res.body.key as string;
  };
  const sk = await issue(ALL_SCOPES);
  const lacking: Record<string, string> = {};
  for (const scope of ALL_SCOPES) lacking[scope] = await issue(ALL_SCOPES.filter((s) => s !== scope));
  const tenant: TenantData = {
    name,
    accountId,
    sk,
    lacking,
    app: await app(api, world, name, accountId),
    sibling: await app(api, world, name, accountId),
    shared: {},
    endpoint: undefined!,
    user: undefined!,
    patientSnapshot: {},
  };
  world.tenants[name] = tenant;
  return tenant;
}

/** The shared fixtures of one tenant (see TenantData.shared for their names). */
async function populate(world: World, tenant: TenantData): Promise<void> {
  const { api } = world;
  const make = new Factory(world, tenant);
  const s = tenant.shared;
  s.patient = { live: await make.patient(), deleted: await make.patient(true) };
  tenant.patientSnapshot = (
    await api.request('GET', `${PLATFORM}/patients/${s.patient.live}`, { key: tenant.sk })
  ).body;
  const endpoint = await make.endpoint();
  await make.endpoint(); // a second live endpoint, so that a page of one has a next cursor
  s.endpoint = { live: endpoint.id, deleted: (await make.endpoint(true)).id };
  tenant.endpoint = {
    ...endpoint,
    snapshot: (await api.request('GET', `${PLATFORM}/webhook-endpoints/${endpoint.id}`, { key: tenant.sk })).body,
  };
  const list = await api.request('GET', `${PLATFORM}/webhook-endpoints?limit=1`, { key: tenant.sk });
  ok(list, 200, 'list endpoints');
  s.listCursor = { live: list.body.pagination.nextCursor };

  // The shared app user: ACTIVE, one connection with observations; its session is the completed one.
  const user = await make.connection();
  // One with the same id in every tenant's connection: what the FHIR read asks for (MATRIX_OBSERVATION).
  await make.ingest(user.connectionId, 3, [MATRIX_OBSERVATION]);
  s.appUser = { live: user.appUserId, deleted: await make.appUser(true) };
  s.initiatedUser = { live: user.appUserId, deleted: s.appUser.deleted };
  s.connection = { live: user.connectionId, deleted: await make.revokedConnection() };
  s.session = { live: await make.pendingSession(), deleted: user.sessionId };
  // A cursor of a connection that is revoked afterwards: continuing it must be 404, not the data.
  const doomed = await make.connection();
  await make.ingest(doomed.connectionId, 2);
  const doomedCursor = await make.searchCursor(doomed.connectionId);
  ok(
    await api.request('DELETE', `${PLATFORM}/connections/${doomed.connectionId}`, { key: tenant.sk }),
    204,
    'revoke connection',
  );
  s.searchCursor = { live: await make.searchCursor(user.connectionId), deleted: doomedCursor };
  const search = await api.request('POST', `${SDK}/observations/_search`, {
    key: tenant.app.ak,
    body: { connectionId: user.connectionId },
  });
  ok(search, 200, 'search');
  tenant.user = { ...user, total: search.body.total };
  s.apiKey = { live: await make.apiKey(), deleted: await make.apiKey(true) };
  s.account = { live: tenant.accountId };
  s.app = { live: tenant.app.appId };
}

/** Revoked keys of tenant A (a secret key, and the secret key of an app of its own), and a suspended account's keys. */
async function strangers(api: TestApi, world: World): Promise<Strangers> {
  const a = world.tenants.A;
  const revokedSk = await api.admin('POST', `/customer-accounts/${a.accountId}/api-keys`, { scopes: ALL_SCOPES });
  ok(revokedSk, 201, 'issue key');
  world.remember('A', revokedSk.body.id, revokedSk.body.key);
  const revokedApp = await app(api, world, 'A', a.accountId);
  for (const keyId of [revokedSk.body.id, revokedApp.akId])
    ok(await api.admin('DELETE', `/api-keys/${keyId}`), 204, 'revoke key');

  const account = await api.admin('POST', '/customer-accounts', { name: marker('C', 'account') });
  ok(account, 201, 'create account');
  const sk = await api.admin('POST', `/customer-accounts/${account.body.id}/api-keys`, { scopes: ALL_SCOPES });
  ok(sk, 201, 'issue key');
  world.remember('C', account.body.id, account.body.name, sk.body.id, sk.body.key);
  const suspendedApp = await app(api, world, 'C', account.body.id);
  ok(
    await api.admin('PATCH', `/customer-accounts/${account.body.id}`, { status: 'SUSPENDED' }),
    200,
    'suspend account',
  );
  return {
    revoked: { sk: revokedSk.body.key, ak: revokedApp.ak },
    suspended: { accountId: account.body.id, sk: sk.body.key, pk: suspendedApp.pk, ak: suspendedApp.ak },
  };
}

/** Publishes the brand list fixtures plus one brand, then the lists alone: that brand's id is a removed brand. */
async function catalog(api: TestApi): Promise<World['brands']> {
  const removedUrl = 'https://fhir.leakcheck-removed.example.test/r4';
  const extra: LoadedSource = {
    name: 'removed',
    priority: 1,
    platformType: 'OTHER',
    parsed: parseSource('csv', `name,fhirBaseUrl,city,state\nLeakcheck Removed Health,${removedUrl},Springfield,IL\n`),
  };
  await publishTo(api, [...realSources(), extra]);
  const removed = api.services.activeCatalog.get()!.index.search('leakcheck removed', { limit: 1 }).brands[0]!.id;
  await publishTo(api, realSources());
  const brandOf = async (q: string) => {
    const res = await api.request('GET', `${SDK}/catalog/brands?q=${q}`);
    ok(res, 200, 'catalog search');
    return res.body.brands[0] as { id: string; logoUrl: string | null };
  };
  const withLogo = await brandOf('examplelabs');
  expect(withLogo.logoUrl).to.be.a('string');
  const logo = await fetch(`${api.url}${SDK}/catalog/brands/${withLogo.id}/logo`, { redirect: 'manual' });
  expect(logo.status).to.equal(307);
  const assetKey = decodeURIComponent(
    new URL(logo.headers.get('location')!, api.url).pathname.slice(`${SDK}/catalog/assets/`.length),
  );
  return { connect: (await brandOf('mercy')).id, withLogo: withLogo.id, removed, assetKey };
}

export async function buildWorld(api: TestApi, receiver: Receiver): Promise<World> {
  const markers: World['markers'] = { A: new Set(), B: new Set(), C: new Set() };
  const world: World = {
    api,
    receiver,
    strangers: undefined!,
    tenants: {} as Record<TenantName, TenantData>,
    brands: await catalog(api),
    markers,
    remember: (tenant, ...values) => {
      for (const value of values)
        if (typeof value === 'string') for (const token of tokensOfValue(value)) markers[tenant].add(token);
    },
  };
  await Promise.all(TENANTS.map((name) => tenantOf(api, world, name)));
  await Promise.all(TENANTS.map((name) => populate(world, world.tenants[name])));
  world.strangers = await strangers(api, world);
  return world;
}
