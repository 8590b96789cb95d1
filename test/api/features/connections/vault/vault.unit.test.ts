// The token vault's rules (docs/connecting.md, "Token vault") against the in-memory token store, with the connection
// lifecycle on the in-memory app-user store and outbox, and a hand-written health system (its discovery and OAuth
// client): an access token near its expiry, or refused, is refreshed first, once, however many callers (in one
// process and across replicas) ask at once; a refused grant and a refresh naming another patient give the tokens up,
// the connection then waiting for its patient (REAUTHORIZATION_REQUIRED); any other failure keeps them.
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { FakeAppUserStore } from '../../../../../api/src/features/app-users/fake-store.js';
import { UserTransitions } from '../../../../../api/src/features/app-users/transitions.js';
import { ConnectionService } from '../../../../../api/src/features/connections/lifecycle.js';
import { FakeSyncStore } from '../../../../../api/src/features/connections/sync/fake-store.js';
import { TokenDisposal } from '../../../../../api/src/features/connections/vault/disposal.js';
import { FakeTokenStore } from '../../../../../api/src/features/connections/vault/fake-store.js';
import { Keyring } from '../../../../../api/src/features/connections/vault/keyring.js';
import { sealContext } from '../../../../../api/src/features/connections/vault/sealing.js';
import {
  REFRESH_EARLY_MS,
  ReauthorizationRequired,
  TokenVault,
} from '../../../../../api/src/features/connections/vault/vault.js';
import { FakeOutbox } from '../../../../../api/src/features/events/fake-outbox.js';
import {
  OAuthFailure,
  Registrations,
  type GrantedTokens,
  type SmartDiscovery,
  type SmartOAuthClient,
  type SmartServer,
} from '../../../../../api/src/features/smart/index.js';
import { ManualClock } from '../../../../../testkit/clock.js';

const ACCOUNT = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const BRAND = { id: 'brand-a', platformType: 'EPIC', fhirBaseUrl: 'https://fhir.example.org/r4' } as const;
const BINDING = { accountId: ACCOUNT, fhirBaseUrl: BRAND.fhirBaseUrl, patient: 'ada' };
const SERVER: SmartServer = {
  fhirBaseUrl: BRAND.fhirBaseUrl,
  issuer: 'https://fhir.example.org',
  authorizationEndpoint: 'https://fhir.example.org/authorize',
  tokenEndpoint: 'https://fhir.example.org/token',
  revocationEndpoint: 'https://fhir.example.org/revoke',
  v2: true,
  scopesSupported: [],
  issParameter: true,
  issuerDeclared: true,
};

/** A promise settled from outside. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * The health system: each refresh request waits for the test's answer (`answer`), and says it arrived (`arrived`);
 * revocations are recorded.
 */
class HealthSystem {
  /** The refresh tokens each refresh request was made with. */
  readonly refreshes: string[] = [];
  readonly revoked: { token: string; hint: string }[] = [];
  private pending = HealthSystem.answer();
  private reached = deferred<void>();

  /** An answer to come; a refusal is handled by the refresh that awaits it, whenever that arrives. */
  private static answer() {
    const answer = deferred<GrantedTokens>();
    answer.promise.catch(() => {});
    return answer;
  }

  readonly discovery: Pick<SmartDiscovery, 'discover'> = { discover: async () => SERVER };
  readonly oauth: Pick<SmartOAuthClient, 'refresh' | 'revoke'> = {
    refresh: async (_server, _registration, refreshToken) => {
      this.refreshes.push(refreshToken);
      this.reached.resolve();
      return this.pending.promise;
    },
    revoke: async (_server, _registration, token, hint) => {
      this.revoked.push({ token, hint });
      return true;
    },
  };

  /** Settles when a refresh request has arrived. */
  get arrived(): Promise<void> {
    return this.reached.promise;
  }

  /** Answers the refresh request (the one waiting, or the next). */
  answer(tokens: Partial<GrantedTokens>): void {
    this.pending.resolve({
      accessToken: 'access-2',
      refreshToken: 'refresh-2',
      expiresAt: undefined,
      scope: 'patient/Observation.rs offline_access',
      patient: undefined,
      ...tokens,
    });
  }

  /** Refuses the refresh request with `error`. */
  refuse(error: Error): void {
    this.pending.reject(error);
  }

  /** The next refresh request waits for an answer of its own. */
  next(): void {
    [this.pending, this.reached] = [HealthSystem.answer(), deferred<void>()];
  }
}

describe('connections: the token vault (fakes)', () => {
  let clock: ManualClock;
  let store: FakeTokenStore;
  let keyring: Keyring;
  let ehr: HealthSystem;
  let users: FakeAppUserStore;
  let outbox: FakeOutbox;
  let connections: ConnectionService;
  let disposal: TokenDisposal;
  let connectionId: string;

  /**
   * A replica's vault on the shared store. `pause`: what it does while another replica holds the refresh; by default
   * the test fails (in one process, callers share one refresh and never wait on the store).
   */
  const replica = (pause: () => Promise<void> = () => Promise.reject(new Error('waited on the store'))) =>
    new TokenVault({
      store,
      keyring,
      oauth: ehr.oauth as SmartOAuthClient,
      discovery: ehr.discovery as SmartDiscovery,
      registrations: new Registrations([
        { match: { fhirHost: 'fhir.example.org' }, clientId: 'portico-test', auth: { method: 'none' } },
      ]),
      clock,
      disposal,
      connections,
      pause,
    });

  const grant = (overrides: Partial<GrantedTokens> = {}): GrantedTokens => ({
    accessToken: 'access-1',
    refreshToken: 'refresh-1',
    expiresAt: new Date(clock.now().getTime() + 600_000),
    scope: 'patient/Observation.rs offline_access',
    patient: 'ada',
    ...overrides,
  });
  /** The stored tokens, opened. */
  const stored = async () => {
    const record = await store.get(connectionId);
    if (!record) return null;
    const open = (field: 'access' | 'refresh') => {
      const sealed = record[field];
      return sealed && keyring.open(sealed, sealContext(connectionId, field, BINDING, sealed));
    };
    return { access: open('access'), refresh: open('refresh'), version: record.version, refreshing: record.refreshing };
  };
  const connection = async () => (await connections.connectionOf(ACCOUNT, connectionId))?.connection;
  const events = () => outbox.committed.map((e) => [e.type, e.data['reason']]);

  beforeEach(async () => {
    clock = new ManualClock(new Date('2026-11-23T10:00:00.000Z'));
    store = new FakeTokenStore();
    keyring = new Keyring([{ kid: 'k1', key: randomBytes(32) }]);
    ehr = new HealthSystem();
    users = new FakeAppUserStore();
    outbox = new FakeOutbox(clock);
    const registrations = new Registrations([
      { match: { fhirHost: 'fhir.example.org' }, clientId: 'portico-test', auth: { method: 'none' } },
    ]);
    disposal = new TokenDisposal({
      store,
      keyring,
      oauth: ehr.oauth as SmartOAuthClient,
      discovery: ehr.discovery as SmartDiscovery,
      registrations,
    });
    connections = new ConnectionService({
      users,
      transitions: new UserTransitions({ users, outbox, clock }),
      outbox,
      tokens: disposal,
      syncs: new FakeSyncStore(),
      clock,
    });
    connectionId = randomUUID();
    await connections.connect(ACCOUNT, 'user-1', {
      appId: randomUUID(),
      brandId: BRAND.id,
      sessionId: randomUUID(),
      connectionId,
      health: { fhirBaseUrl: BRAND.fhirBaseUrl, patient: 'ada', scope: 'patient/Observation.rs offline_access' },
    });
    outbox.committed.length = 0;
  });

  it('hands the stored access token out until a minute before it expires, then refreshes it first', async () => {
    const vault = replica();
    await vault.save(connectionId, ACCOUNT, BRAND, grant());
    expect(await vault.accessToken(connectionId, BINDING)).to.equal('access-1');
    clock.advance(600_000 - REFRESH_EARLY_MS - 1);
    expect(await vault.accessToken(connectionId, BINDING)).to.equal('access-1');
    expect(ehr.refreshes).to.deep.equal([]);
    clock.advance(1);
    ehr.answer({ patient: 'ada' });
    expect(await vault.accessToken(connectionId, BINDING)).to.equal('access-2');
    expect(ehr.refreshes).to.deep.equal(['refresh-1']);
    // The rotated refresh token is stored, sealed, with the access token, at the next version.
    expect(await stored()).to.deep.equal({ access: 'access-2', refresh: 'refresh-2', version: 2, refreshing: null });
    // A server that gave no expiry: the token is used until refused.
    expect(await vault.accessToken(connectionId, BINDING)).to.equal('access-2');
    expect(ehr.refreshes).to.have.length(1);
  });

  it('refreshes a token a server refused, unless it was replaced already; keeps a refresh token not rotated', async () => {
    const vault = replica();
    await vault.save(connectionId, ACCOUNT, BRAND, grant());
    ehr.answer({ refreshToken: undefined });
    expect(await vault.accessToken(connectionId, BINDING, 'access-1')).to.equal('access-2');
    expect(await vault.accessToken(connectionId, BINDING, 'access-1'), 'refused before').to.equal('access-2');
    expect(ehr.refreshes).to.deep.equal(['refresh-1']);
    expect(await stored()).to.deep.include({ access: 'access-2', refresh: 'refresh-1', version: 2 });
  });

  it('lets callers in one process share one refresh: one request reaches the health system', async () => {
    const vault = replica();
    await vault.save(connectionId, ACCOUNT, BRAND, grant({ expiresAt: clock.now() }));
    const callers = Array.from({ length: 5 }, () => vault.accessToken(connectionId, BINDING));
    await ehr.arrived;
    ehr.answer({});
    expect(await Promise.all(callers)).to.deep.equal(Array(5).fill('access-2'));
    expect(ehr.refreshes).to.deep.equal(['refresh-1']);
    expect(await stored()).to.deep.include({ access: 'access-2', version: 2 });
  });

  it('lets another replica wait for the refresh one holds, and use the tokens it stored', async () => {
    await replica().save(connectionId, ACCOUNT, BRAND, grant({ expiresAt: clock.now() }));
    const first = replica().accessToken(connectionId, BINDING);
    await ehr.arrived;
    let waits = 0;
    const other = replica(async () => {
      waits++;
      ehr.answer({}); // the refresh the first replica holds ends meanwhile
      await first;
    });
    expect(await other.accessToken(connectionId, BINDING)).to.equal('access-2');
    expect(await first).to.equal('access-2');
    expect(waits).to.equal(1);
    expect(ehr.refreshes).to.deep.equal(['refresh-1']);
  });

  it('gives the tokens up when the health system refuses the grant: the connection waits for its patient', async () => {
    const vault = replica();
    await vault.save(connectionId, ACCOUNT, BRAND, grant({ expiresAt: clock.now() }));
    ehr.refuse(new OAuthFailure('invalid_grant', 'the refresh token was revoked'));
    const refused = await vault.accessToken(connectionId, BINDING).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(ReauthorizationRequired);
    expect(await store.get(connectionId)).to.equal(null);
    expect(await connection()).to.deep.include({ status: 'REAUTHORIZATION_REQUIRED', statusReason: 'invalid_grant' });
    expect(events()).to.deep.equal([['connection.reauthorization_required', 'invalid_grant']]);
    const again = await vault.accessToken(connectionId, BINDING).catch((e: unknown) => e);
    expect(again).to.be.instanceOf(ReauthorizationRequired);
    expect(events(), 'once').to.have.length(1);
  });

  it('keeps the tokens a reconnect stored while a refused refresh was in flight', async () => {
    const vault = replica();
    await vault.save(connectionId, ACCOUNT, BRAND, grant({ expiresAt: clock.now() }));
    const refreshing = vault.accessToken(connectionId, BINDING).catch((e: unknown) => e);
    await ehr.arrived;
    await vault.save(connectionId, ACCOUNT, BRAND, grant({ accessToken: 'access-new', refreshToken: 'refresh-new' }));
    ehr.refuse(new OAuthFailure('invalid_grant', 'the refresh token was revoked'));
    expect(await refreshing).to.be.instanceOf(ReauthorizationRequired);
    expect(await stored()).to.deep.equal({
      access: 'access-new',
      refresh: 'refresh-new',
      version: 2,
      refreshing: null,
    });
    expect(await connection()).to.deep.include({ status: 'ACTIVE' });
    expect(events()).to.deep.equal([]);
  });

  it('keeps the tokens when a refresh fails otherwise, and frees the refresh for the next caller', async () => {
    const vault = replica();
    await vault.save(connectionId, ACCOUNT, BRAND, grant({ expiresAt: clock.now() }));
    const unavailable = new OAuthFailure('brand_unavailable', 'the token endpoint did not answer');
    ehr.refuse(unavailable);
    expect(await vault.accessToken(connectionId, BINDING).catch((e: unknown) => e)).to.equal(unavailable);
    expect(await stored()).to.deep.equal({ access: 'access-1', refresh: 'refresh-1', version: 1, refreshing: null });
    expect(await connection()).to.deep.include({ status: 'ACTIVE' });
    ehr.next();
    ehr.answer({});
    expect(await vault.accessToken(connectionId, BINDING)).to.equal('access-2');
    expect(ehr.refreshes).to.deep.equal(['refresh-1', 'refresh-1']);
  });

  it('gives up a refresh naming another patient: nothing of either grant is kept, and both are revoked', async () => {
    const vault = replica();
    await vault.save(connectionId, ACCOUNT, BRAND, grant({ expiresAt: clock.now() }));
    ehr.answer({ patient: 'grace', accessToken: 'graces-access', refreshToken: 'graces-refresh' });
    const mismatch = await vault.accessToken(connectionId, BINDING).catch((e: unknown) => e);
    expect(mismatch).to.be.instanceOf(ReauthorizationRequired);
    expect(await store.get(connectionId)).to.equal(null);
    expect(await connection()).to.deep.include({
      status: 'REAUTHORIZATION_REQUIRED',
      statusReason: 'patient_mismatch',
      health: { fhirBaseUrl: BRAND.fhirBaseUrl, patient: 'ada', scope: 'patient/Observation.rs offline_access' },
    });
    expect(events()).to.deep.equal([['connection.reauthorization_required', 'patient_mismatch']]);
    await vault.settled();
    expect(ehr.revoked).to.have.deep.members([
      { token: 'graces-refresh', hint: 'refresh_token' },
      { token: 'refresh-1', hint: 'refresh_token' },
    ]);
  });
});
