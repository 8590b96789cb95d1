// Connect sessions (CONTRACT §6.3): an app initiates one for its user and a brand (publishable key; the
// user becomes LIMITED if it was never seen), the patient authorises at the brand's portal, and the
// customer's backend completes it (secret key), which makes the connection and activates the user.
// Initiate is rate limited per (account, appUserId) by a token bucket shared by replicas.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../../core/src/clock.js';
import type { AppUserService } from '../../app-users/service.js';
import type { Connection } from '../../app-users/repository.js';
import type { Principal } from '../../http/auth.js';
import { AppError, invalidField, notFound } from '../../http/errors.js';
import { rateLimited, rateLimitHeaders, type RateLimiter, type RatePolicy } from '../../infra/rate-limit.js';
import type { ConnectSession, SessionStore } from './repository.js';
import type { InitiateSession } from './schema.js';
import { UUID } from '../../http/ids.js';

export const SESSION_TTL_MS = 30 * 60_000;
/** How long a complete holds its session before another may take it over (it died part-way). */
const CLAIM_MS = 30_000;

export interface ConnectSessionServiceDeps {
  sessions: SessionStore;
  users: AppUserService;
  limiter: RateLimiter;
  policy: RatePolicy;
  /** Whether the served catalog has the brand. */
  brandExists: (brandId: string) => boolean;
  clock: Clock;
}

export class ConnectSessionService {
  constructor(private readonly deps: ConnectSessionServiceDeps) {}

  /** The session and the RateLimit header fields of the bucket's decision (a 429 carries them too). */
  async initiate(principal: Principal, input: InitiateSession): Promise<{ session: ConnectSession; rateHeaders: Record<string, string> }> {
    const rate = await this.deps.limiter.take(`${principal.accountId}\n${input.appUserId}`);
    const rateHeaders = rateLimitHeaders(this.deps.policy, rate);
    if (!rate.allowed) throw rateLimited('Too many connect sessions initiated for this app user; retry after the time given.', this.deps.policy, rate);
    if (!this.deps.brandExists(input.brandId)) throw invalidField('body', 'brandId', 'is not a brand of the catalog');
    await this.deps.users.provision(principal.accountId, input.appUserId);
    const now = this.deps.clock.now();
    const session: ConnectSession = {
      id: randomUUID(),
      accountId: principal.accountId,
      appId: principal.appId!,
      appUserId: input.appUserId,
      brandId: input.brandId,
      status: 'PENDING',
      createdAt: now,
      expiresAt: new Date(now.getTime() + SESSION_TTL_MS),
      completedAt: null,
      connectionId: null,
    };
    await this.deps.sessions.insert(session);
    return { session, rateHeaders };
  }

  async complete(principal: Principal, id: string): Promise<{ connection: Connection; appUserId: string }> {
    const session = UUID.test(id) ? await this.deps.sessions.get(principal.accountId, id) : null;
    if (!session) throw notFound('connect session');
    const completed = () => new AppError('CONFLICT', 'The connect session is already completed.', { status: 'COMPLETED' });
    const now = this.deps.clock.now();
    if (session.status === 'COMPLETED') throw completed();
    if (session.status === 'PENDING' && now >= session.expiresAt) throw new AppError('CONFLICT', 'The connect session has expired; initiate a new one.', { expiresAt: session.expiresAt.toISOString() });
    // The session is claimed first, with the id its connection will have: of two completes one claims it
    // (the other is 409), and a complete that died part-way is taken over once its claim lapses, with the
    // same connection id, so it never makes a second connection.
    const connectionId = session.status === 'COMPLETING' ? session.connectionId! : randomUUID();
    const claimed = await this.deps.sessions.claim(session, connectionId, now, new Date(now.getTime() + CLAIM_MS));
    if (!claimed) throw completed();
    const connection = await this.deps.users.connect(principal.accountId, session.appUserId, { appId: session.appId, brandId: session.brandId, sessionId: session.id, connectionId });
    await this.deps.sessions.complete(session.id, connectionId, this.deps.clock.now());
    return { connection, appUserId: session.appUserId };
  }
}
