// Connect sessions (docs/api.md, "Connecting a patient's health system"): an app initiates one for its user and a
// brand (publishable key; the user becomes LIMITED if it was never seen), the patient authorises at the brand's
// portal, and the customer's backend completes it (secret key), which makes the connection and activates the user.
// Initiate is rate limited per (account, appUserId) and per publishable key by token buckets shared by replicas
// (initiate-limits.ts); a suspended app's sessions cannot be completed.
import { randomBytes, randomUUID } from 'node:crypto';
import { digest } from '../../shared/http/secrets.js';
import type { Clock } from '#core/clock.js';
import type { AppUserService, Connection } from '../app-users/index.js';
import type { Principal } from '../../shared/http/auth.js';
import { AppError, invalidField, notFound } from '../../shared/http/errors.js';
import type { InitiateLimits } from './initiate-limits.js';
import { checkReconnect, type LinkTokenService } from './link-tokens.js';
import type { ServedBrands, SessionConnections, SignIns } from './ports.js';
import type { AppStore } from '../apps/index.js';
import type { ConnectSession, SessionStore } from './store.js';
import type { InitiateSession } from './schema.js';
import { UUID } from '../../shared/http/ids.js';

export const SESSION_TTL_MS = 30 * 60_000;
/** How long a complete holds its session before another may take it over (it died part-way). */
const CLAIM_MS = 30_000;

export interface ConnectSessionServiceDeps {
  sessions: SessionStore;
  users: Pick<AppUserService, 'provision'>;
  connections: SessionConnections;
  limits: InitiateLimits;
  links: LinkTokenService;
  apps: AppStore;
  brands: ServedBrands;
  signIns: SignIns;
  clock: Clock;
}

/** What an initiate made: the session, the secret of its authorizeUrl (with a redirectUri), the buckets' fields. */
export interface Initiated {
  session: ConnectSession;
  launchSecret: string | null;
  rateHeaders: Record<string, string>;
}

/** SHA-256 in base64url: how secrets handed out (a launch's, a `state`) are kept. */
export { digest };

export class ConnectSessionService {
  constructor(private readonly deps: ConnectSessionServiceDeps) {}

  /**
   * The session and the RateLimit fields of the buckets it took its tokens from. The request is checked
   * before it takes any (an unknown brand is a 400 that takes none); an answer refused after it took them
   * (a TOMBSTONED user's 409) carries the same fields.
   */
  async initiate(principal: Principal, input: InitiateSession): Promise<Initiated> {
    if (input.brandId === undefined && input.redirectUri === undefined)
      throw invalidField(
        'body',
        'brandId',
        'is required without redirectUri (Portico Connect returns the patient there)',
      );
    if (input.brandId !== undefined && this.deps.brands.brand(input.brandId) === undefined)
      throw invalidField('body', 'brandId', 'is not a brand of the catalog');
    if (input.linkToken !== undefined && input.redirectUri === undefined)
      throw invalidField('body', 'linkToken', 'is used only with redirectUri (a session the patient signs in to)');
    // The link token first: without one (or with another user's) nothing else about the request is told.
    const token = input.redirectUri === undefined ? null : await this.deps.links.check(principal, input);
    await this.checkLaunch(principal, input);
    const id = randomUUID();
    // Spent before the buckets are: of two initiates racing with one token, the loser pays no rate-limit token. An
    // initiate the buckets then refuse gives it back (a 429 is no use of the token).
    if (token) await this.deps.links.spend(token, id);
    let rateHeaders: Record<string, string>;
    try {
      rateHeaders = await this.deps.limits.take(principal, input.appUserId);
    } catch (error) {
      if (token) await this.deps.links.giveBack(token, id).catch(() => {});
      throw error;
    }
    try {
      const launchSecret = input.redirectUri === undefined ? null : randomBytes(32).toString('base64url');
      return { session: await this.start(principal, input, launchSecret, id), launchSecret, rateHeaders };
    } catch (error) {
      if (error instanceof AppError) Object.assign(error.headers, rateHeaders);
      throw error;
    }
  }

  /**
   * The error with the buckets' fields as they stand (it took no token): every answer to an initiate with a
   * valid key carries them, unless Redis cannot say (then the error goes as it is: it is the answer).
   */
  async withRateFields(error: AppError, principal: Principal, appUserId?: string): Promise<AppError> {
    if (error.headers['RateLimit'] !== undefined) return error;
    Object.assign(error.headers, await this.rateFields(principal, appUserId));
    return error;
  }

  /** The buckets' fields as they stand, taking nothing; none when Redis cannot say. */
  async rateFields(principal: Principal, appUserId?: string): Promise<Record<string, string>> {
    try {
      return await this.deps.limits.peek(principal, appUserId);
    } catch {
      return {}; // the fields are a courtesy; the answer stands without them
    }
  }

  /** A launch's request, checked before it takes a token: its redirect URI, the brand, the connection it renews. */
  private async checkLaunch(principal: Principal, input: InitiateSession): Promise<void> {
    if (input.redirectUri === undefined) {
      if (input.connectionId !== undefined)
        throw invalidField('body', 'connectionId', 'needs redirectUri: a reconnect is a sign-in');
      return;
    }
    const app = await this.deps.apps.get(principal.appId!);
    if (!app?.redirectUris.includes(input.redirectUri))
      throw invalidField('body', 'redirectUri', "is not one of the app's redirectUris");
    if (input.brandId === undefined) {
      if (input.connectionId !== undefined)
        throw invalidField('body', 'brandId', "is required with connectionId (the connection's brand)");
      if (!this.deps.signIns.anyConnectable())
        throw new AppError(
          'BRAND_NOT_CONNECTABLE',
          'Portico holds no client registration for any health system (PORTICO_SMART_CLIENTS), so Portico Connect has nothing to offer.',
        );
      return; // the patient chooses in Portico Connect
    }
    if (!(await this.deps.signIns.connectable(input.brandId)))
      throw new AppError(
        'BRAND_NOT_CONNECTABLE',
        "Portico cannot lead a patient to this brand's sign-in: it holds no client registration for its health system, or the brand's endpoints are not where its registration allows. Complete sessions for it from your backend instead.",
        { brandId: input.brandId },
      );
    if (input.connectionId === undefined) return;
    await checkReconnect(this.deps.connections, principal.accountId, {
      appId: principal.appId!,
      appUserId: input.appUserId,
      brandId: input.brandId,
      connectionId: input.connectionId,
    });
  }

  private async start(
    principal: Principal,
    input: InitiateSession,
    launchSecret: string | null,
    id: string,
  ): Promise<ConnectSession> {
    await this.deps.users.provision(principal.accountId, input.appUserId);
    const now = this.deps.clock.now();
    const session: ConnectSession = {
      id,
      accountId: principal.accountId,
      appId: principal.appId!,
      appUserId: input.appUserId,
      brandId: input.brandId ?? null,
      status: 'PENDING',
      createdAt: now,
      expiresAt: new Date(now.getTime() + SESSION_TTL_MS),
      completedAt: null,
      connectionId: null,
      redirectUri: input.redirectUri ?? null,
      reconnect: input.connectionId ?? null,
      launchHash: launchSecret === null ? null : digest(launchSecret),
    };
    await this.deps.sessions.insert(session);
    return session;
  }

  async complete(principal: Principal, id: string): Promise<{ connection: Connection; appUserId: string }> {
    const session = UUID.test(id) ? await this.deps.sessions.get(principal.accountId, id) : null;
    if (!session) throw notFound('connect session');
    const completed = () =>
      new AppError('CONFLICT', 'The connect session is already completed.', { status: 'COMPLETED' });
    if (session.brandId === null)
      throw new AppError(
        'CONFLICT',
        'The connect session names no brand: the patient chooses one in Portico Connect.',
        {
          status: session.status,
        },
      );
    const now = this.deps.clock.now();
    if (session.status === 'COMPLETED') throw completed();
    // A session the patient launched belongs to the sign-in: the callback completes it, or it failed.
    if (session.status !== 'PENDING' && session.status !== 'COMPLETING')
      throw new AppError('CONFLICT', 'The connect session is being completed by its sign-in at the health system.', {
        status: session.status,
      });
    if (session.status === 'PENDING' && now >= session.expiresAt)
      throw new AppError('CONFLICT', 'The connect session has expired; initiate a new one.', {
        expiresAt: session.expiresAt.toISOString(),
      });
    // A suspended app's sessions wait: completing one would connect an app that may not act.
    const app = await this.deps.apps.find(session.appId);
    // Not stored by idempotency: the same request succeeds once the app is active again.
    if (app?.status !== 'ACTIVE')
      throw new AppError(
        'CONFLICT',
        "The connect session's app is suspended; it can be completed once the app is active again.",
        { appStatus: app?.status ?? null },
        {},
        { storable: false },
      );
    // The session is claimed first, with the id its connection will have: of two completes one claims it
    // (the other is 409), and a complete that died part-way is taken over once its claim lapses, with the
    // same connection id, so it never makes a second connection.
    const connectionId = session.status === 'COMPLETING' ? session.connectionId! : randomUUID();
    const claimed = await this.deps.sessions.claim(session, connectionId, now, new Date(now.getTime() + CLAIM_MS));
    if (!claimed) throw completed();
    const connection = await this.deps.connections.connect(principal.accountId, session.appUserId, {
      appId: session.appId,
      brandId: session.brandId,
      sessionId: session.id,
      connectionId,
    });
    await this.deps.sessions.complete(session.id, connectionId, this.deps.clock.now());
    return { connection, appUserId: session.appUserId };
  }
}
