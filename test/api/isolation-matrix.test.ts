// The tenant-isolation matrix: every operation the API serves in /openapi.json × every variant of
// its identifier (the owner's, another tenant's, unknown, malformed, deleted) × every kind of credential,
// against two tenants with real data built through the API. Each cell must answer the documented status
// (docs/api.md, "Rules every operation follows": 401 for a missing or wrong-kind credential, 403
// PLATFORM_ACCESS_DENIED for a missing scope and for any patient the key may not read, 404 for what is absent,
// deleted or another tenant's); another tenant's id must be answered byte for byte like an unknown one; the denials
// the API makes uniform must be identical; no response may carry a field of a tenant other than the caller's;
// and nothing of the other tenant may change, nor its events reach anyone else's endpoint.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { ADMIN_TOKEN, TestApi } from '../../testkit/api.js';
import { GRANTS } from '../../testkit/apps.js';
import { settled } from '../../testkit/delivery.js';
import { buildPatient } from '../../testkit/factories.js';
import { leaksOf, normalised, requestText, tokensOf, type Exchange } from '../../testkit/isolation-scan.js';
import {
  buildWorld,
  Factory,
  MATRIX_OBSERVATION,
  MATRIX_CONDITION,
  MATRIX_PATIENT,
  MATRIX_BINARY,
  conditionOf,
  MATRIX_RETURN,
  TENANTS,
  type TenantName,
  type World,
} from '../../testkit/isolation-world.js';
import { heartRate, observationBundle } from '../../testkit/observations.js';
import { Receiver, verifyDelivery } from '../../testkit/receivers.js';

const P = '/api/platform/v1';
const S = '/api/sdk/v1';
const A = '/api/admin/v1';
const CONCURRENCY = 16;

// ---- credentials -------------------------------------------------------------------------------------------

interface Caller {
  name: string;
  kind: 'none' | 'admin' | 'sk' | 'pk' | 'ak';
  /** The caller's account: C is a suspended one. */
  tenant?: TenantName | 'C';
  /** Which of the tenant's apps the pk_/ak_ belongs to. */
  app?: 'app' | 'sibling';
  /** The sk_ holds every scope but the one the operation requires. */
  lacking?: boolean;
  /** A revoked key, or a key of a suspended account. */
  dead?: 'revoked' | 'suspended';
}

const CALLERS: Caller[] = [
  { name: 'no credential', kind: 'none' },
  { name: 'admin token', kind: 'admin' },
  { name: 'sk_ of the owner', kind: 'sk', tenant: 'A' },
  { name: 'sk_ of the owner lacking the scope', kind: 'sk', tenant: 'A', lacking: true },
  { name: 'sk_ of another tenant', kind: 'sk', tenant: 'B' },
  { name: "pk_ of the owner's app", kind: 'pk', tenant: 'A', app: 'app' },
  { name: "ak_ of the owner's app", kind: 'ak', tenant: 'A', app: 'app' },
  { name: "ak_ of the owner's other app", kind: 'ak', tenant: 'A', app: 'sibling' },
  { name: "pk_ of another tenant's app", kind: 'pk', tenant: 'B', app: 'app' },
  { name: "ak_ of another tenant's app", kind: 'ak', tenant: 'B', app: 'app' },
  { name: 'revoked sk_ of the owner', kind: 'sk', tenant: 'A', dead: 'revoked' },
  { name: 'revoked ak_ of an app of the owner', kind: 'ak', tenant: 'A', dead: 'revoked' },
  { name: 'sk_ of a suspended account', kind: 'sk', tenant: 'C', dead: 'suspended' },
  { name: "pk_ of a suspended account's app", kind: 'pk', tenant: 'C', dead: 'suspended' },
  { name: "ak_ of a suspended account's app", kind: 'ak', tenant: 'C', dead: 'suspended' },
];

function tokenOf(world: World, caller: Caller, scope: string | undefined): string | undefined {
  if (caller.kind === 'none') return undefined;
  if (caller.kind === 'admin') return ADMIN_TOKEN;
  if (caller.dead === 'suspended') return world.strangers.suspended[caller.kind];
  if (caller.dead === 'revoked') return world.strangers.revoked[caller.kind as 'sk' | 'ak'];
  const tenant = world.tenants[caller.tenant as TenantName];
  if (caller.kind === 'sk') return caller.lacking ? tenant.lacking[scope ?? 'patient:read'] : tenant.sk;
  return tenant[caller.app!][caller.kind];
}

// ---- identifier variants -----------------------------------------------------------------------------------

type Variant = 'own' | 'other' | 'unknown' | 'malformed' | 'deleted' | '-';
const EVERY: Variant[] = ['own', 'other', 'unknown', 'malformed', 'deleted'];

interface Target {
  variant: Variant;
  /** Whose resource: own and deleted are tenant A's, other is tenant B's (none for the public catalog). */
  owner?: TenantName;
  state: 'live' | 'deleted' | 'unknown' | 'malformed' | 'none';
}

interface Param {
  variants: Variant[];
  /** The catalog's brands and assets belong to no tenant. */
  public?: boolean;
  unknown(world: World): string;
  malformed: string;
  /** A new resource (for operations that change it): live, or deleted. */
  fresh?(make: Factory, deleted: boolean): Promise<string>;
}

/** A cursor nobody issued: a real payload under a signature that is not its own. */
const forged = (cursor: string) => `${cursor.split('.')[0]}.${'A'.repeat(43)}`;

const PARAMS = {
  patient: { variants: EVERY, unknown: () => randomUUID(), malformed: 'not-a-uuid', fresh: (m, d) => m.patient(d) },
  endpoint: {
    variants: EVERY,
    unknown: () => randomUUID(),
    malformed: 'not-a-uuid',
    fresh: async (m, d) => (await m.endpoint(d)).id,
  },
  appUser: {
    variants: EVERY,
    unknown: () => `never-seen-${randomUUID()}`,
    malformed: 'bad id!',
    fresh: (m, d) => m.appUser(d),
  },
  initiatedUser: {
    variants: EVERY,
    unknown: () => `never-seen-${randomUUID()}`,
    malformed: 'bad id!',
    fresh: (m, d) => m.initiatedUser(d),
  },
  connection: {
    variants: EVERY,
    unknown: () => randomUUID(),
    malformed: 'not-a-uuid',
    fresh: async (m, d) => (d ? m.revokedConnection() : (await m.connection()).connectionId),
  },
  session: {
    variants: EVERY,
    unknown: () => randomUUID(),
    malformed: 'not-a-uuid',
    fresh: (m, d) => m.pendingSession(d),
  },
  searchCursor: {
    variants: EVERY,
    unknown: (w) => forged(w.tenants.A.shared.searchCursor!.live!),
    malformed: 'not-a-cursor',
  },
  listCursor: {
    variants: ['-', 'own', 'other', 'unknown', 'malformed'],
    unknown: (w) => forged(w.tenants.A.shared.listCursor!.live!),
    malformed: 'not-a-cursor',
  },
  apiKey: { variants: EVERY, unknown: () => randomUUID(), malformed: 'not-a-uuid', fresh: (m, d) => m.apiKey(d) },
  account: { variants: ['own', 'other', 'unknown', 'malformed'], unknown: () => randomUUID(), malformed: 'not-a-uuid' },
  app: { variants: ['own', 'other', 'unknown', 'malformed'], unknown: () => randomUUID(), malformed: 'not-a-uuid' },
  brand: {
    variants: ['own', 'unknown', 'malformed', 'deleted'],
    public: true,
    unknown: () => `b${'a'.repeat(32)}`,
    malformed: 'not a brand!',
  },
  asset: {
    variants: ['own', 'unknown', 'malformed'],
    public: true,
    unknown: (w) => w.brands.assetKey.replace(/[0-9a-f]{16,}/, (hex) => '0'.repeat(hex.length)),
    malformed: '../../package.json',
  },
} satisfies Record<string, Param>;
type ParamName = keyof typeof PARAMS;

function targetOf(variant: Variant, param: Param | undefined): Target {
  switch (variant) {
    case 'own':
      return { variant, owner: param?.public ? undefined : 'A', state: 'live' };
    case 'other':
      return { variant, owner: 'B', state: 'live' };
    case 'deleted':
      return { variant, owner: param?.public ? undefined : 'A', state: 'deleted' };
    case 'unknown':
    case 'malformed':
      return { variant, state: variant };
    default:
      return { variant, state: 'none' };
  }
}

async function valueOf(world: World, name: ParamName, target: Target, fresh: boolean): Promise<string> {
  const param: Param = PARAMS[name];
  if (target.state === 'unknown') return param.unknown(world);
  if (target.state === 'malformed') return param.malformed;
  if (name === 'brand') return target.state === 'live' ? world.brands.withLogo : world.brands.removed;
  if (name === 'asset') return world.brands.assetKey;
  const tenant = world.tenants[target.owner!];
  if (fresh && param.fresh) return param.fresh(new Factory(world, tenant), target.state === 'deleted');
  const value = tenant.shared[name]?.[target.state === 'live' ? 'live' : 'deleted'];
  if (value === undefined) throw new Error(`no shared ${target.state} ${name} of tenant ${tenant.name}`);
  return value;
}

// ---- the operations and what the API answers ----------------------------------------------------------

interface Outcome {
  status: number;
  /** `details` of the problem, when the API fixes it. */
  details?: Record<string, unknown>;
  /** A check of a success body: a message when it is wrong. */
  check?: (body: any, value: string | undefined, x: Exchange) => string | undefined;
}

interface Case {
  op: string;
  surface: 'platform' | 'publishable' | 'secret-app' | 'public' | 'admin' | 'operations';
  scope?: string;
  param?: ParamName;
  /** Changes the resource it names: each cell gets resources of its own. */
  mutates?: boolean;
  /** The app's own resource (gateway): another app of the same tenant is a stranger too. */
  appBound?: boolean;
  /** Errors are FHIR OperationOutcomes (the gateway's FHIR face), not problem details. */
  fhir?: boolean;
  /** Errors are HTML pages for a patient's browser (the sign-in's stops), not problem details. */
  page?: boolean;
  /** Shows every tenant to the admin token (the list of accounts): its admin cells are not scanned for leaks. */
  everyTenant?: boolean;
  request(value: string | undefined, world: World): { path: string; body?: unknown; headers?: Record<string, string> };
  outcome(caller: Caller, target: Target): Outcome;
}

const mine = (caller: Caller, target: Target) => target.owner !== undefined && target.owner === caller.tenant;
const live = (caller: Caller, target: Target) => target.state === 'live' && mine(caller, target);
const e = encodeURIComponent;
const ofStatus = (status: number): Outcome => ({ status });
/** The resource itself: its id is the one asked for. */
const sameId = (status: number): Outcome => ({
  status,
  check: (body, value) => (body?.id === value ? undefined : `body.id ${body?.id} is not ${value}`),
});
/** Owned resources that are absent, deleted or another tenant's: one 404. */
const ownedOr404 = (success: Outcome) => (c: Caller, t: Target) => (live(c, t) ? success : ofStatus(404));
/** App users live in the caller's own namespace: another tenant's id is just a user this tenant never saw. */
const stateIs = (c: Caller, t: Target): Outcome => {
  const expected = live(c, t) ? 'ACTIVE' : mine(c, t) && t.state === 'deleted' ? 'TOMBSTONED' : 'UNLINKED';
  return {
    status: 200,
    check: (body, value) =>
      body?.state === expected && body?.appUserId === value
        ? undefined
        : `expected ${expected} for ${value}, got ${JSON.stringify(body)}`,
  };
};
/**
 * Per-caller answers (docs/api.md, "Rules every operation follows"): `Cache-Control: private, no-cache`, and `Vary:
 * Authorization`.
 */
const privateTo = (inner: Outcome, vary = true): Outcome => ({
  ...inner,
  check: (body, value, x) => {
    const get = (name: string) => x.headers.find(([n]) => n === name)?.[1] ?? '';
    if (get('cache-control') !== 'private, no-cache') return `Cache-Control ${get('cache-control')}`;
    if (vary && !/\bauthorization\b/i.test(get('vary'))) return `Vary ${get('vary')}`;
    return inner.check?.(body, value, x);
  },
});
const listedOwnOnly = (): Outcome => ({
  status: 200,
  check: (body) => (Array.isArray(body?.data) && body.data.length > 0 ? undefined : 'an empty list'),
});

const CASES: Case[] = [
  // Platform: patients (the documented order: scope, tuple, membership → one uniform 403; then 404).
  {
    op: `POST ${P}/patients`,
    surface: 'platform',
    scope: 'patient:write',
    request: () => ({ path: `${P}/patients`, body: buildPatient() }),
    outcome: () => ofStatus(201),
  },
  {
    op: `GET ${P}/patients/{id}`,
    surface: 'platform',
    scope: 'patient:read',
    param: 'patient',
    request: (v) => ({ path: `${P}/patients/${e(v!)}` }),
    outcome: (c, t) =>
      live(c, t) ? privateTo(sameId(200)) : mine(c, t) ? ofStatus(404) : { status: 403, details: {} },
  },
  {
    op: `DELETE ${P}/patients/{id}`,
    surface: 'platform',
    scope: 'patient:write',
    param: 'patient',
    mutates: true,
    request: (v) => ({ path: `${P}/patients/${e(v!)}` }),
    outcome: (c, t) => (live(c, t) ? ofStatus(204) : mine(c, t) ? ofStatus(404) : { status: 403, details: {} }),
  },
  // Platform: webhook endpoints and their deliveries (another account's → 404).
  {
    op: `POST ${P}/webhook-endpoints`,
    surface: 'platform',
    scope: 'webhook:write',
    request: (_, w) => ({
      path: `${P}/webhook-endpoints`,
      body: { url: w.receiver.url(`/hooks/new/${randomUUID()}`), eventTypes: ['webhook_endpoint.disabled'] },
    }),
    outcome: () => ofStatus(201),
  },
  {
    op: `GET ${P}/webhook-endpoints`,
    surface: 'platform',
    scope: 'webhook:read',
    param: 'listCursor',
    request: (v) => ({
      path: v === undefined ? `${P}/webhook-endpoints?limit=100` : `${P}/webhook-endpoints?limit=1&cursor=${e(v)}`,
    }),
    outcome: (c, t) => (t.variant === '-' || live(c, t) ? listedOwnOnly() : ofStatus(400)),
  },
  {
    op: `GET ${P}/webhook-endpoints/{id}`,
    surface: 'platform',
    scope: 'webhook:read',
    param: 'endpoint',
    request: (v) => ({ path: `${P}/webhook-endpoints/${e(v!)}` }),
    outcome: ownedOr404(sameId(200)),
  },
  {
    op: `PATCH ${P}/webhook-endpoints/{id}`,
    surface: 'platform',
    scope: 'webhook:write',
    param: 'endpoint',
    mutates: true,
    request: (v) => ({ path: `${P}/webhook-endpoints/${e(v!)}`, body: { description: 'patched by the matrix' } }),
    outcome: ownedOr404(sameId(200)),
  },
  {
    op: `DELETE ${P}/webhook-endpoints/{id}`,
    surface: 'platform',
    scope: 'webhook:write',
    param: 'endpoint',
    mutates: true,
    request: (v) => ({ path: `${P}/webhook-endpoints/${e(v!)}` }),
    outcome: ownedOr404(ofStatus(204)),
  },
  {
    op: `GET ${P}/webhook-endpoints/{id}/deliveries`,
    surface: 'platform',
    scope: 'webhook:read',
    param: 'endpoint',
    request: (v) => ({ path: `${P}/webhook-endpoints/${e(v!)}/deliveries` }),
    outcome: ownedOr404(ofStatus(200)),
  },
  {
    op: `POST ${P}/webhook-endpoints/{id}/recover`,
    surface: 'platform',
    scope: 'webhook:write',
    param: 'endpoint',
    request: (v) => ({
      path: `${P}/webhook-endpoints/${e(v!)}/recover`,
      body: { since: new Date(Date.now() - 3_600_000).toISOString() },
    }),
    outcome: ownedOr404(ofStatus(202)),
  },
  {
    op: `POST ${P}/webhook-endpoints/{id}/rotate-secret`,
    surface: 'platform',
    scope: 'webhook:write',
    param: 'endpoint',
    mutates: true,
    request: (v) => ({ path: `${P}/webhook-endpoints/${e(v!)}/rotate-secret` }),
    outcome: ownedOr404(ofStatus(200)),
  },
  {
    op: `POST ${P}/webhook-endpoints/{id}/test`,
    surface: 'platform',
    scope: 'webhook:write',
    param: 'endpoint',
    request: (v) => ({ path: `${P}/webhook-endpoints/${e(v!)}/test` }),
    outcome: ownedOr404(ofStatus(202)),
  },
  // Platform: app users (namespaced by account), connections, connect sessions, clinical ingest.
  {
    op: `GET ${P}/app-users/{appUserId}`,
    surface: 'platform',
    scope: 'app_user:read',
    param: 'appUser',
    request: (v) => ({ path: `${P}/app-users/${e(v!)}` }),
    outcome: (c, t) => (t.state === 'malformed' ? ofStatus(400) : stateIs(c, t)),
  },
  {
    // The access log of a user id in the caller's namespace: another tenant's reads never show (its user of the same
    // id is not this account's), whatever the id.
    op: `GET ${P}/app-users/{appUserId}/access-log`,
    surface: 'platform',
    scope: 'app_user:read',
    param: 'appUser',
    request: (v) => ({ path: `${P}/app-users/${e(v!)}/access-log` }),
    outcome: (c, t) =>
      t.state === 'malformed'
        ? ofStatus(400)
        : privateTo({
            status: 200,
            check: (body) =>
              Array.isArray(body?.data) && (live(c, t) || body.data.length === 0)
                ? undefined
                : `expected no entries, got ${JSON.stringify(body)}`,
          }),
  },
  {
    op: `DELETE ${P}/app-users/{appUserId}`,
    surface: 'platform',
    scope: 'app_user:write',
    param: 'appUser',
    mutates: true,
    request: (v) => ({ path: `${P}/app-users/${e(v!)}` }),
    outcome: (_, t) => ofStatus(t.state === 'malformed' ? 400 : 204),
  },
  {
    // A link to the patient's page, for a user the account has seen (a tombstoned one too); else 404.
    op: `POST ${P}/app-users/{appUserId}/portal-sessions`,
    surface: 'platform',
    scope: 'app_user:write',
    param: 'appUser',
    request: (v) => ({ path: `${P}/app-users/${e(v!)}/portal-sessions` }),
    outcome: (c, t) =>
      t.state === 'malformed' ? ofStatus(400) : mine(c, t) && t.state !== 'unknown' ? ofStatus(201) : ofStatus(404),
  },
  {
    op: `DELETE ${P}/connections/{connectionId}`,
    surface: 'platform',
    scope: 'app_user:write',
    param: 'connection',
    mutates: true,
    request: (v) => ({ path: `${P}/connections/${e(v!)}` }),
    outcome: ownedOr404(ofStatus(204)),
  },
  {
    // Connections made by complete have no health system to sync from: 409 for the account's own.
    op: `POST ${P}/connections/{connectionId}/sync`,
    surface: 'platform',
    scope: 'app_user:write',
    param: 'connection',
    request: (v) => ({ path: `${P}/connections/${e(v!)}/sync` }),
    outcome: ownedOr404(ofStatus(409)),
  },
  {
    // A link token for one of the account's own apps; another account's app is answered as an unknown one.
    op: `POST ${P}/link-tokens`,
    surface: 'platform',
    scope: 'app_user:write',
    param: 'app',
    mutates: true,
    request: (v) => ({
      path: `${P}/link-tokens`,
      body: { appUserId: 'matrix-linker', appId: v, redirectUri: MATRIX_RETURN },
    }),
    outcome: (c, t) =>
      live(c, t)
        ? { status: 201, check: (body) => (/^lt_[0-9A-Za-z]{40}$/.test(body?.linkToken) ? undefined : 'no token') }
        : ofStatus(400),
  },
  {
    op: `POST ${P}/connect-sessions/{id}/complete`,
    surface: 'platform',
    scope: 'app_user:write',
    param: 'session',
    mutates: true,
    request: (v) => ({ path: `${P}/connect-sessions/${e(v!)}/complete` }),
    outcome: (c, t) => (live(c, t) ? ofStatus(200) : mine(c, t) ? ofStatus(409) : ofStatus(404)),
  },
  {
    op: `POST ${P}/connections/{connectionId}/observations`,
    surface: 'platform',
    scope: 'clinical:write',
    param: 'connection',
    mutates: true,
    request: (v) => ({
      path: `${P}/connections/${e(v!)}/observations`,
      body: observationBundle([heartRate()]),
      headers: { 'content-type': 'application/fhir+json' },
    }),
    outcome: ownedOr404({
      status: 200,
      check: (body) => (body?.ingested === 1 ? undefined : `ingested ${JSON.stringify(body)}`),
    }),
  },
  {
    op: `POST ${P}/connections/{connectionId}/resources`,
    surface: 'platform',
    scope: 'clinical:write',
    param: 'connection',
    mutates: true,
    request: (v) => ({
      path: `${P}/connections/${e(v!)}/resources`,
      body: {
        resourceType: 'Bundle',
        type: 'collection',
        entry: [{ resource: conditionOf(`c-${randomUUID()}`, 'matrix-patient') }],
      },
      headers: { 'content-type': 'application/fhir+json' },
    }),
    outcome: ownedOr404({
      status: 200,
      check: (body) => (body?.ingested === 1 ? undefined : `ingested ${JSON.stringify(body)}`),
    }),
  },
  // SDK: the public catalog (the same answer whatever credential is sent).
  {
    op: `GET ${S}/catalog/brands`,
    surface: 'public',
    request: () => ({ path: `${S}/catalog/brands?q=mercy` }),
    outcome: () => ({ status: 200, check: (body) => (body?.count > 0 ? undefined : 'no brands') }),
  },
  {
    op: `GET ${S}/catalog/brands/{brandId}`,
    surface: 'public',
    param: 'brand',
    request: (v) => ({ path: `${S}/catalog/brands/${e(v!)}` }),
    outcome: (_, t) =>
      t.state === 'live'
        ? { status: 200, check: (body, v) => (body?.brand?.id === v ? undefined : 'another brand') }
        : ofStatus(404),
  },
  {
    op: `GET ${S}/catalog/brands/{brandId}/logo`,
    surface: 'public',
    param: 'brand',
    request: (v) => ({ path: `${S}/catalog/brands/${e(v!)}/logo` }),
    outcome: (_, t) => ofStatus(t.state === 'live' ? 307 : 404),
  },
  {
    op: `GET ${S}/catalog/assets/{key}`,
    surface: 'public',
    param: 'asset',
    request: (v) => ({ path: `${S}/catalog/assets/${e(v!)}` }),
    outcome: (_, t) => ofStatus(t.state === 'live' ? 200 : 404),
  },
  // SDK: publishable key (account-namespaced app users).
  {
    op: `POST ${S}/connect-sessions`,
    surface: 'publishable',
    param: 'initiatedUser',
    mutates: true,
    request: (v, w) => ({ path: `${S}/connect-sessions`, body: { appUserId: v, brandId: w.brands.connect } }),
    outcome: (c, t) => ofStatus(t.state === 'malformed' ? 400 : mine(c, t) && t.state === 'deleted' ? 409 : 201),
  },
  {
    op: `GET ${S}/app-users/{appUserId}/lifecycle`,
    surface: 'publishable',
    param: 'appUser',
    request: (v) => ({ path: `${S}/app-users/${e(v!)}/lifecycle` }),
    outcome: (c, t) => (t.state === 'malformed' ? ofStatus(400) : privateTo(stateIs(c, t), false)),
  },
  // SDK: the observation gateway (the key's own app's live connection, else one 404; cursors bound to the app).
  {
    op: `POST ${S}/observations/_search`,
    surface: 'secret-app',
    param: 'connection',
    appBound: true,
    request: (v) => ({ path: `${S}/observations/_search`, body: { connectionId: v } }),
    outcome: (c, t) =>
      live(c, t) && c.app === 'app'
        ? { status: 200, check: (body) => (body?.total > 0 ? undefined : 'no observations') }
        : ofStatus(404),
  },
  {
    op: `GET ${S}/observations/_search`,
    surface: 'secret-app',
    param: 'searchCursor',
    appBound: true,
    request: (v) => ({ path: `${S}/observations/_search?cursor=${e(v!)}` }),
    outcome: (c, t) => (mine(c, t) && c.app === 'app' ? ofStatus(t.state === 'live' ? 200 : 404) : ofStatus(400)),
  },
  // SDK: the sign-in's two public stops. A session's id without its launch secret (or `state`) opens nothing, whoever
  // owns it: the same page for every variant.
  {
    op: `GET ${S}/connect/launch/{token}`,
    surface: 'public',
    param: 'session',
    page: true,
    request: (v) => ({ path: `${S}/connect/launch/${e(`${v!}.forged-secret`)}` }),
    outcome: () => ofStatus(404),
  },
  {
    op: `GET ${S}/connect/callback`,
    surface: 'public',
    param: 'session',
    page: true,
    request: (v) => ({ path: `${S}/connect/callback?code=forged&state=${e(`${v!}.forged-state`)}` }),
    outcome: () => ofStatus(400),
  },
  {
    // Portico Connect's script: the same file for everyone.
    op: `GET ${S}/connect/assets/{file}`,
    surface: 'public',
    request: () => ({ path: `${S}/connect/assets/picker.js` }),
    outcome: () => ofStatus(200),
  },
  // SDK: the patient's page. A forged link opens nothing, and without the page's cookie nothing is shown or changed,
  // whoever asks: the same page for every variant.
  {
    op: `GET ${S}/portal/open/{token}`,
    surface: 'public',
    param: 'session',
    page: true,
    request: (v) => ({ path: `${S}/portal/open/${e(`${v!}.forged-secret`)}` }),
    outcome: () => ofStatus(404),
  },
  {
    op: `GET ${S}/portal`,
    surface: 'public',
    page: true,
    request: () => ({ path: `${S}/portal` }),
    outcome: () => ofStatus(410),
  },
  {
    op: `POST ${S}/portal/connections/{connectionId}/stop`,
    surface: 'public',
    param: 'connection',
    page: true,
    request: (v) => ({ path: `${S}/portal/connections/${e(v!)}/stop?token=forged` }),
    outcome: () => ofStatus(410),
  },
  {
    op: `GET ${S}/portal/access-log.json`,
    surface: 'public',
    page: true,
    request: () => ({ path: `${S}/portal/access-log.json` }),
    outcome: () => ofStatus(410),
  },
  // SDK: the gateway as a FHIR server (the same checks; errors as OperationOutcomes).
  {
    op: `GET ${S}/fhir/connections/{connectionId}/metadata`,
    surface: 'public',
    param: 'connection',
    fhir: true,
    request: (v) => ({ path: `${S}/fhir/connections/${e(v!)}/metadata` }),
    outcome: () => ({
      status: 200,
      check: (body) => (body?.resourceType === 'CapabilityStatement' ? undefined : 'not a CapabilityStatement'),
    }),
  },
  ...[
    ['GET', 'Observation'],
    ['GET', 'Observation/_search'],
    ['POST', 'Observation/_search'],
  ].map(([method, path]): Case => ({
    op: `${method} ${S}/fhir/connections/{connectionId}/${path}`,
    surface: 'secret-app',
    param: 'connection',
    appBound: true,
    fhir: true,
    request: (v) => ({ path: `${S}/fhir/connections/${e(v!)}/${path}` }),
    outcome: (c, t) =>
      live(c, t) && c.app === 'app'
        ? { status: 200, check: (body) => (body?.total > 0 ? undefined : 'no observations') }
        : ofStatus(404),
  })),
  ...[
    ['GET', '{type}', 'Condition'],
    ['GET', '{type}/_search', 'Condition/_search'],
    ['POST', '{type}/_search', 'Condition/_search'],
  ].map(([method, template, path]): Case => ({
    op: `${method} ${S}/fhir/connections/{connectionId}/${template}`,
    surface: 'secret-app',
    param: 'connection',
    appBound: true,
    fhir: true,
    request: (v) => ({ path: `${S}/fhir/connections/${e(v!)}/${path}` }),
    outcome: (c, t) =>
      live(c, t) && c.app === 'app'
        ? { status: 200, check: (body) => (body?.total > 0 ? undefined : 'no conditions') }
        : ofStatus(404),
  })),
  {
    op: `GET ${S}/fhir/connections/{connectionId}/Patient/{id}/$everything`,
    surface: 'secret-app',
    param: 'connection',
    appBound: true,
    fhir: true,
    request: (v) => ({ path: `${S}/fhir/connections/${e(v!)}/Patient/${MATRIX_PATIENT}/$everything` }),
    outcome: (c, t) =>
      live(c, t) && c.app === 'app'
        ? { status: 200, check: (body) => (body?.total > 0 ? undefined : 'nothing in $everything') }
        : ofStatus(404),
  },
  {
    op: `GET ${S}/fhir/connections/{connectionId}/Binary/{id}`,
    surface: 'secret-app',
    param: 'connection',
    appBound: true,
    fhir: true,
    request: (v) => ({ path: `${S}/fhir/connections/${e(v!)}/Binary/${MATRIX_BINARY}` }),
    outcome: (c, t) => (live(c, t) && c.app === 'app' ? ofStatus(200) : ofStatus(404)),
  },
  {
    op: `GET ${S}/fhir/connections/{connectionId}/{type}/{id}`,
    surface: 'secret-app',
    param: 'connection',
    appBound: true,
    fhir: true,
    request: (v) => ({ path: `${S}/fhir/connections/${e(v!)}/Condition/${MATRIX_CONDITION}` }),
    outcome: (c, t) =>
      live(c, t) && c.app === 'app'
        ? { status: 200, check: (body) => (body?.id === MATRIX_CONDITION ? undefined : `read ${body?.id}`) }
        : ofStatus(404),
  },
  {
    op: `GET ${S}/fhir/connections/{connectionId}/Observation/{id}`,
    surface: 'secret-app',
    param: 'connection',
    appBound: true,
    fhir: true,
    request: (v) => ({ path: `${S}/fhir/connections/${e(v!)}/Observation/${MATRIX_OBSERVATION}` }),
    outcome: (c, t) =>
      live(c, t) && c.app === 'app'
        ? { status: 200, check: (body) => (body?.id === MATRIX_OBSERVATION ? undefined : `read ${body?.id}`) }
        : ofStatus(404),
  },
  // Admin (the operator's surface: every tenant, nothing for anyone else).
  {
    op: `POST ${A}/customer-accounts`,
    surface: 'admin',
    request: () => ({ path: `${A}/customer-accounts`, body: { name: 'Matrix account' } }),
    outcome: () => ofStatus(201),
  },
  {
    op: `GET ${A}/customer-accounts`,
    surface: 'admin',
    everyTenant: true,
    request: () => ({ path: `${A}/customer-accounts?limit=100` }),
    outcome: () => ({ status: 200, check: (body) => (body?.data?.length > 0 ? undefined : 'no accounts') }),
  },
  ...['apps', 'api-keys'].map((list): Case => ({
    op: `GET ${A}/customer-accounts/{id}/${list}`,
    surface: 'admin',
    param: 'account',
    request: (v) => ({ path: `${A}/customer-accounts/${e(v!)}/${list}?limit=100` }),
    outcome: (_, t) =>
      t.state === 'live'
        ? { status: 200, check: (body) => (body?.data?.length > 0 ? undefined : `no ${list}`) }
        : ofStatus(404),
  })),
  {
    op: `PATCH ${A}/customer-accounts/{id}`,
    surface: 'admin',
    param: 'account',
    request: (v) => ({ path: `${A}/customer-accounts/${e(v!)}`, body: { status: 'ACTIVE' } }),
    outcome: (_, t) => (t.state === 'live' ? sameId(200) : ofStatus(404)),
  },
  {
    op: `POST ${A}/customer-accounts/{id}/api-keys`,
    surface: 'admin',
    param: 'account',
    request: (v) => ({ path: `${A}/customer-accounts/${e(v!)}/api-keys`, body: { scopes: ['patient:read'] } }),
    outcome: (_, t) => ofStatus(t.state === 'live' ? 201 : 404),
  },
  {
    op: `DELETE ${A}/api-keys/{keyId}`,
    surface: 'admin',
    param: 'apiKey',
    mutates: true,
    request: (v) => ({ path: `${A}/api-keys/${e(v!)}` }),
    outcome: (_, t) => ofStatus(t.state === 'live' ? 204 : 404),
  },
  {
    op: `POST ${A}/customer-accounts/{id}/apps`,
    surface: 'admin',
    param: 'account',
    request: (v) => ({ path: `${A}/customer-accounts/${e(v!)}/apps`, body: { name: 'Matrix app', grants: GRANTS } }),
    outcome: (_, t) => ofStatus(t.state === 'live' ? 201 : 404),
  },
  {
    op: `PATCH ${A}/apps/{id}`,
    surface: 'admin',
    param: 'app',
    request: (v) => ({ path: `${A}/apps/${e(v!)}`, body: { status: 'ACTIVE' } }),
    outcome: (_, t) => (t.state === 'live' ? sameId(200) : ofStatus(404)),
  },
  // Operations (no credential; the same for everyone).
  ...['/healthz', '/readyz', '/metrics', '/openapi.json'].map((path): Case => ({
    op: `GET ${path}`,
    surface: 'operations',
    request: () => ({ path }),
    outcome: () => ofStatus(200),
  })),
];

/** What the surface answers before the operation looks at the identifier. */
function gate(c: Case, caller: Caller): Outcome | undefined {
  const kind = { platform: 'sk', publishable: 'pk', 'secret-app': 'ak', admin: 'admin' }[c.surface as string];
  if (kind === undefined) return undefined;
  if (caller.kind !== kind || caller.dead === 'revoked') return ofStatus(401);
  // A suspended account's every credential: 403 on the platform surface, 401 on the SDK (docs/api.md, "suspension").
  if (caller.dead === 'suspended') return c.surface === 'platform' ? { status: 403, details: {} } : ofStatus(401);
  if (c.surface === 'platform' && caller.lacking) return { status: 403, details: { requiredScope: c.scope } };
  return undefined;
}

const CODES: Record<number, string> = { 400: 'BAD_REQUEST', 401: 'UNAUTHORIZED', 404: 'NOT_FOUND', 409: 'CONFLICT' };

// ---- running the matrix ------------------------------------------------------------------------------------

interface Cell {
  case: Case;
  caller: Caller;
  target: Target;
  value?: string;
  expected: Outcome;
  /** Headers of the cell's own (a precondition, for the twins). */
  headers?: Record<string, string>;
  /** The cell this one repeats with a precondition, which must not change its denial. */
  twinOf?: Cell;
  exchange?: Exchange;
  error?: string;
}

const methodOf = (cell: Cell) => cell.case.op.split(' ')[0]!;
const cellName = (cell: Cell) =>
  `${cell.case.op} [${cell.target.variant}]${
    cell.twinOf
      ? ` with ${Object.entries(cell.headers!)
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')}`
      : ''
  } as ${cell.caller.name}`;

/** The tenant whose data the caller may see: its own; the admin token sees the tenant it names. */
function allowedTenant(cell: Cell): string | undefined {
  if (cell.case.surface === 'admin' && cell.caller.kind === 'admin') return cell.target.owner;
  return cell.caller.tenant;
}

async function send(
  api: TestApi,
  method: string,
  request: ReturnType<Case['request']>,
  token: string | undefined,
  extra: Record<string, string>,
): Promise<Exchange> {
  const headers: Record<string, string> = { ...request.headers, ...extra };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const body = request.body === undefined ? undefined : JSON.stringify(request.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(api.url + request.path, { method, headers, body, redirect: 'manual' });
  return {
    method,
    path: request.path,
    requestHeaders: headers,
    requestBody: body,
    status: res.status,
    headers: [...res.headers],
    body: await res.text(),
  };
}

/** Runs every item, at most CONCURRENCY at a time. */
async function pooled<T>(items: T[], run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await run(items[next++]!);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

function cellsOf(cases: Case[]): Cell[] {
  const cells: Cell[] = [];
  for (const c of cases) {
    const param: Param | undefined = c.param && PARAMS[c.param];
    for (const variant of param?.variants ?? ['-']) {
      for (const caller of CALLERS) {
        const target = targetOf(variant, param);
        cells.push({ case: c, caller, target, expected: gate(c, caller) ?? c.outcome(caller, target) });
      }
    }
  }
  return cells;
}

/**
 * The denials past the credential check again, with a precondition that would match anything (`If-None-Match:
 * *` on a read, `If-Match: *` on a change): preconditions come after authorization and existence (docs/api.md,
 * "Rules every operation follows"), so the answer must be the same, byte for byte.
 */
function twinsOf(cells: Cell[]): Cell[] {
  return cells
    .filter(
      (cell) =>
        cell.exchange && cell.case.param && gate(cell.case, cell.caller) === undefined && cell.expected.status >= 400,
    )
    .filter((cell) => ['GET', 'PATCH', 'DELETE'].includes(methodOf(cell)) || cell.case.op.endsWith('/rotate-secret'))
    .map((cell): Cell => ({
      ...cell,
      exchange: undefined,
      twinOf: cell,
      headers: { [methodOf(cell) === 'GET' ? 'if-none-match' : 'if-match']: '*' },
    }));
}

async function run(world: World, cell: Cell): Promise<void> {
  const method = methodOf(cell);
  try {
    // A change can only happen past the credential check: there, each cell changes resources of its own.
    const fresh = cell.case.mutates === true && gate(cell.case, cell.caller) === undefined;
    if (cell.case.param && cell.target.variant !== '-' && cell.value === undefined)
      cell.value = await valueOf(world, cell.case.param, cell.target, fresh);
    // Every change carries an idempotency key, the same for every credential of the operation and variant:
    // its scope is the credential, so no cell may be answered with another's outcome (docs/api.md, "Rules every
    // operation follows").
    const key: Record<string, string> =
      method === 'GET'
        ? {}
        : {
            'idempotency-key': `matrix:${cell.case.op.replace(/ /g, ':')}:${cell.target.variant}${cell.twinOf ? ':if' : ''}`,
          };
    cell.exchange = await send(
      world.api,
      method,
      cell.case.request(cell.value, world),
      tokenOf(world, cell.caller, cell.case.scope),
      { ...key, ...cell.headers },
    );
  } catch (error) {
    cell.error = String((error as Error).stack ?? error);
  }
}

// ---- assertions ------------------------------------------------------------------------------------------

function header(x: Exchange, name: string): string | undefined {
  return x.headers.find(([n]) => n.toLowerCase() === name)?.[1];
}

/** What is wrong with one cell's answer, if anything. */
function verdict(cell: Cell): string | undefined {
  const x = cell.exchange;
  if (!x) return `no answer: ${cell.error}`;
  const { expected } = cell;
  const shown = `${x.status} ${x.body.slice(0, 300)}`;
  if (x.status !== expected.status) return `expected ${expected.status}, got ${shown}`;
  if (header(x, 'x-request-id') === undefined) return 'no X-Request-Id';
  if (header(x, 'idempotent-replayed') !== undefined) return `replayed another request's outcome: ${shown}`;
  if (x.status < 400) {
    // A response to a credential is never stored by a shared cache for anyone else.
    const cacheControl = header(x, 'cache-control') ?? '';
    if (
      cell.caller.kind !== 'none' &&
      !['public', 'operations'].includes(cell.case.surface) &&
      /\b(public|s-maxage)\b/.test(cacheControl)
    )
      return `publicly cacheable: Cache-Control ${cacheControl}`;
    if (!expected.check) return undefined;
    let body: unknown;
    try {
      body = JSON.parse(x.body);
    } catch {
      return `not JSON: ${shown}`;
    }
    return expected.check(body, cell.value, x);
  }
  const wrong = cell.case.fhir
    ? outcomeVerdict(x, shown)
    : cell.case.page
      ? pageVerdict(x, shown)
      : problemVerdict(cell, x, shown);
  if (wrong) return wrong;
  if (x.status === 401) {
    const challenge =
      cell.caller.kind === 'none' ? 'Bearer realm="portico"' : 'Bearer realm="portico", error="invalid_token"';
    if (header(x, 'www-authenticate') !== challenge)
      return `WWW-Authenticate ${header(x, 'www-authenticate')}, expected ${challenge}`;
  }
  return undefined;
}

/** What is wrong with an error's problem details, if anything. */
function problemVerdict(cell: Cell, x: Exchange, shown: string): string | undefined {
  if (!/^application\/problem\+json/.test(header(x, 'content-type') ?? ''))
    return `not problem details: ${header(x, 'content-type')} ${shown}`;
  const problem = JSON.parse(x.body) as Record<string, unknown>;
  const code =
    x.status === 403
      ? cell.case.surface === 'secret-app'
        ? 'GATEWAY_ACCESS_DENIED'
        : 'PLATFORM_ACCESS_DENIED'
      : CODES[x.status];
  if (problem.code !== code || problem.status !== x.status) return `expected code ${code}, got ${shown}`;
  const missing = ['type', 'title', 'status', 'detail', 'instance', 'code', 'details', 'retryable'].filter(
    (f) => !(f in problem),
  );
  if (missing.length > 0) return `problem without ${missing.join(', ')}`;
  const { expected } = cell;
  if (expected.details && JSON.stringify(problem.details) !== JSON.stringify(expected.details))
    return `expected details ${JSON.stringify(expected.details)}, got ${shown}`;
  return undefined;
}

/** What is wrong with an error page (the sign-in's stops), if anything: HTML that loads nothing and names no one. */
function pageVerdict(x: Exchange, shown: string): string | undefined {
  if (!/^text\/html/.test(header(x, 'content-type') ?? '')) return `not a page: ${header(x, 'content-type')} ${shown}`;
  if (!/default-src 'none'/.test(header(x, 'content-security-policy') ?? '')) return `no strict CSP: ${shown}`;
  if (/[0-9a-f]{8}-[0-9a-f]{4}-/.test(x.body)) return `the page names an id: ${shown}`;
  return undefined;
}

/** What is wrong with an error's OperationOutcome (the FHIR face), if anything. */
function outcomeVerdict(x: Exchange, shown: string): string | undefined {
  if (!/^application\/fhir\+json/.test(header(x, 'content-type') ?? ''))
    return `not an OperationOutcome: ${header(x, 'content-type')} ${shown}`;
  const issue = (JSON.parse(x.body) as { issue?: { code: string; details: { text: string } }[] }).issue?.[0];
  const type = ({ 400: 'invalid', 401: 'security', 403: 'security', 404: 'not-found' } as Record<number, string>)[
    x.status
  ];
  if (issue?.code !== type || (x.status !== 403 && issue?.details.text !== CODES[x.status]))
    return `expected an OperationOutcome of ${type}, ${CODES[x.status]}: got ${shown}`;
  return undefined;
}

/** Whether the cell names a resource that is not the caller's: another tenant's, or (gateway) another app's. */
function foreign(cell: Cell): boolean {
  const { target, caller } = cell;
  if (target.owner === undefined || caller.tenant === undefined) return false;
  return target.owner !== caller.tenant || (cell.case.appBound === true && caller.app !== 'app');
}

function detailsOf(x: Exchange): string {
  try {
    return JSON.stringify(JSON.parse(x.body).details);
  } catch {
    return 'none';
  }
}

/** Groups of cells whose answers must be byte-identical (minus per-request fields), with why. */
function identityGroups(cells: Cell[]): Map<string, Cell[]> {
  const groups = new Map<string, Cell[]>();
  const add = (key: string, cell: Cell) => groups.set(key, [...(groups.get(key) ?? []), cell]);
  for (const cell of cells) {
    const x = cell.exchange;
    if (!x) continue;
    const op = cell.case.op;
    if (cell.twinOf) {
      // A precondition does not change a denial.
      if (cell.twinOf.exchange)
        groups.set(`${cellName(cell)}: the same as without the precondition`, [cell.twinOf, cell]);
      continue;
    }
    // Another tenant's (or app's) id is answered exactly like an unknown one: nothing tells them apart.
    if (
      (foreign(cell) || cell.target.variant === 'unknown') &&
      cell.expected.status >= 400 &&
      !(cell.case.surface === 'admin')
    )
      add(`${op} as ${cell.caller.name}: another tenant's id answered like an unknown one`, cell);
    // One 404 for absent, deleted and another tenant's (docs/api.md, "Rules every operation follows"), whoever asks.
    if (x.status === 404) add(`${op}: every 404`, cell);
    // One uniform 403 (docs/api.md, "Rules every operation follows"), per `details`.
    if (x.status === 403) add(`${op}: every 403 with details ${detailsOf(x)}`, cell);
    // A refused credential says nothing about the identifier.
    if (x.status === 401) add(`${op} as ${cell.caller.name}: every 401`, cell);
    // The public catalog answers everyone alike (its answers are cached publicly).
    if (cell.case.surface === 'public') add(`${op} [${cell.target.variant}]: every credential`, cell);
  }
  for (const [key, members] of groups) if (members.length < 2) groups.delete(key);
  return groups;
}

// ---- the test ----------------------------------------------------------------------------------------------

for (const redis of [true, false]) {
  describe(`tenant isolation matrix: every operation × identifier variant × credential (${redis ? 'with Redis' : 'one replica, no Redis'})`, function () {
    this.timeout(300_000);
    let api: TestApi;
    let receiver: Receiver;
    let world: World;
    let operations: string[];
    let cells: Cell[];
    let twins: Cell[];
    let all: Cell[];
    let seconds: number;
    let setupSeconds: number;

    before(async function () {
      this.timeout(300_000);
      const started = Date.now();
      receiver = await Receiver.start();
      api = await TestApi.start({
        redis,
        dispatch: true,
        env: { PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true', PUBLIC_BASE_URL: 'https://portico.example.test' },
      });
      world = await buildWorld(api, receiver);
      setupSeconds = (Date.now() - started) / 1000;
      const document = (await api.request('GET', '/openapi.json')).body as {
        paths: Record<string, Record<string, { operationId?: string }>>;
      };
      operations = Object.entries(document.paths).flatMap(([path, ops]) =>
        Object.keys(ops)
          .filter((m) => ops[m]?.operationId)
          .map((m) => `${m.toUpperCase()} ${path}`),
      );
      const served = new Set(operations);
      cells = cellsOf(CASES.filter((c) => served.has(c.op)));
      // Reads first, then the cells that change what they name (each on resources of its own).
      await pooled(
        cells.filter((c) => !c.case.mutates),
        (cell) => run(world, cell),
      );
      await pooled(
        cells.filter((c) => c.case.mutates),
        (cell) => run(world, cell),
      );
      twins = twinsOf(cells);
      await pooled(twins, (cell) => run(world, cell));
      all = [...cells, ...twins];
      seconds = (Date.now() - started) / 1000;
    });
    after(async () => {
      await api?.close();
      await receiver?.close();
    });

    it('has a case for every operation /openapi.json lists, and none for an operation it does not', () => {
      const cased = new Set(CASES.map((c) => c.op));
      expect(
        operations.filter((op) => !cased.has(op)),
        'operations without a case',
      ).to.deep.equal([]);
      expect(
        [...cased].filter((op) => !operations.includes(op)),
        'cases of operations no longer served',
      ).to.deep.equal([]);
      const variants = cells.length / CALLERS.length;
      console.log(
        `      matrix: ${new Set(cells.map((c) => c.case.op)).size} operations, ${variants} operation × identifier variants, × ${CALLERS.length} credentials = ${cells.length} cells, + ${twins.length} denials repeated with a precondition (data ${setupSeconds.toFixed(1)} s, cells ${(seconds - setupSeconds).toFixed(1)} s)`,
      );
    });

    it('declares the documented scope for every platform operation in /openapi.json', async () => {
      const document = (await api.request('GET', '/openapi.json')).body as {
        paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>>;
      };
      const wrong = CASES.filter((c) => c.surface === 'platform').filter((c) => {
        const [method, path] = c.op.split(' ');
        return (
          JSON.stringify(document.paths[path!]?.[method!.toLowerCase()]?.security) !==
          JSON.stringify([{ platformKey: [c.scope] }])
        );
      });
      expect(wrong.map((c) => c.op)).to.deep.equal([]);
    });

    for (const surface of ['platform', 'publishable', 'secret-app', 'public', 'admin', 'operations'] as const) {
      it(`answers the documented status and problem in every cell: ${surface} surface`, () => {
        const ofSurface = all.filter((c) => c.case.surface === surface);
        expect(ofSurface.length).to.be.greaterThan(0);
        const wrong = ofSurface.map((cell) => [cell, verdict(cell)] as const).filter(([, v]) => v !== undefined);
        expect(
          wrong.map(([cell, v]) => `${cellName(cell)}${cell.value !== undefined ? ` (${cell.value})` : ''}: ${v}`),
        ).to.deep.equal([]);
      });
    }

    it('answers byte-identically where nothing may tell the cases apart', () => {
      const groups = identityGroups(all);
      expect(groups.size).to.be.greaterThan(50);
      const differing: string[] = [];
      for (const [why, members] of groups) {
        const first = normalised(members[0]!.exchange!);
        const odd = members.filter((m) => normalised(m.exchange!) !== first);
        if (odd.length > 0)
          differing.push(
            `${why}:\n    ${cellName(members[0]!)} → ${first.replace(/\n/g, ' | ')}\n    ${odd.map((m) => `${cellName(m)} → ${normalised(m.exchange!).replace(/\n/g, ' | ')}`).join('\n    ')}`,
          );
      }
      expect(differing).to.deep.equal([]);
    });

    it("never shows a caller another tenant's ids, names, e-mails, URLs or secrets, in a body or a header", () => {
      for (const tenant of TENANTS) expect(world.markers[tenant].size, `markers of ${tenant}`).to.be.greaterThan(100);
      const leaks = all
        .filter((c) => c.exchange && !(c.case.everyTenant && c.caller.kind === 'admin'))
        .flatMap((cell) =>
          leaksOf(cell.exchange!, allowedTenant(cell), world.markers).map((leak) => `${cellName(cell)}: ${leak}`),
        );
      expect(leaks).to.deep.equal([]);
    });

    it("leaves the other tenant's resources as they were, and delivers each tenant's events to its own endpoints only", async () => {
      for (const name of TENANTS) {
        const t = world.tenants[name];
        const patient = await api.request('GET', `${P}/patients/${t.shared.patient!.live}`, { key: t.sk });
        expect(patient.body, `${name}'s patient`).to.deep.equal(t.patientSnapshot);
        const endpoint = await api.request('GET', `${P}/webhook-endpoints/${t.endpoint.id}`, { key: t.sk });
        const fields = (o: Record<string, unknown>) => ({
          url: o.url,
          description: o.description,
          eventTypes: o.eventTypes,
          status: o.status,
        });
        expect(fields(endpoint.body), `${name}'s endpoint`).to.deep.equal(fields(t.endpoint.snapshot));
        const user = await api.request('GET', `${P}/app-users/${t.user.appUserId}`, { key: t.sk });
        expect(user.body.state, `${name}'s app user`).to.equal('ACTIVE');
        expect(user.body.connections.map((c: { id: string }) => c.id)).to.deep.equal([t.user.connectionId]);
        const search = await api.request('POST', `${S}/observations/_search`, {
          key: t.app.ak,
          body: { connectionId: t.user.connectionId },
        });
        expect([search.status, search.body.total], `${name}'s search`).to.deep.equal([200, t.user.total]);
        expect(
          (await api.request('GET', `${P}/app-users/${t.shared.appUser!.deleted}`, { key: t.sk })).body.state,
        ).to.equal('TOMBSTONED');
        expect(
          (await api.request('GET', `${S}/app-users/${t.user.appUserId}/lifecycle`, { key: t.app.pk })).body.state,
        ).to.equal('ACTIVE');
      }
      // Deliveries, once every event is dispatched and no retry is queued (every delivery made): every event at
      // a tenant's path is that tenant's, carries nothing of the other, and verifies with the shared endpoint's
      // original secret (no one rotated it).
      await settled(api.mongo.db, 60_000);
      const wrong: string[] = [];
      for (const name of TENANTS) {
        const t = world.tenants[name];
        // What the tenant's own requests sent (an app user id it chose, even one the other tenant uses too) is
        // no leak when its own events carry it back.
        const sent = new Set(
          all
            .filter((c) => c.exchange && c.caller.tenant === name)
            .flatMap((c) => [...tokensOf(requestText(c.exchange!))]),
        );
        const at = receiver.received.filter((r) => r.path.startsWith(`/hooks/${name.toLowerCase()}/`));
        expect(at.length, `deliveries to ${name}`).to.be.greaterThan(5);
        for (const delivery of at) {
          if (delivery.payload.customerAccountId !== t.accountId)
            wrong.push(`${delivery.path}: event of account ${delivery.payload.customerAccountId}`);
          const exchange: Exchange = {
            method: 'POST',
            path: delivery.path,
            requestHeaders: {},
            requestBody: undefined,
            status: 200,
            headers: Object.entries(delivery.headers).map(([k, v]) => [k, String(v)]),
            body: delivery.body,
          };
          for (const leak of leaksOf(exchange, name, world.markers, sent))
            wrong.push(`${delivery.path} (${delivery.payload.type}): ${leak}`);
        }
        expect(receiver.at(t.endpoint.path).length, `deliveries to ${name}'s shared endpoint`).to.be.greaterThan(0);
        for (const delivery of receiver.at(t.endpoint.path)) {
          try {
            verifyDelivery(t.endpoint.secret, delivery);
          } catch (error) {
            wrong.push(`${delivery.path}: does not verify with the original secret (${(error as Error).message})`);
          }
        }
      }
      expect(wrong).to.deep.equal([]);
    });
  });
}
