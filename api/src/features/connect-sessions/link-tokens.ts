// Link tokens (docs/connecting.md, "Link tokens"): a publishable key ships in web pages and an appUserId is often
// guessable, so a session whose sign-in completes by itself (one with a redirectUri) may only be started with a
// token the app's backend minted with its secret key for that very user. A token binds the account, the app, the
// appUserId, the redirect URI and, when given, the brand or the connection to reconnect; it is opaque, kept only as
// its SHA-256, used once, and lives 30 minutes (as long as a session).
import type { Clock } from '#core/clock.js';
import type { AppStore } from '../apps/index.js';
import type { Principal } from '../../shared/http/auth.js';
import { AppError, invalidField } from '../../shared/http/errors.js';
import { hashKey, randomBase62 } from '../../shared/http/keys.js';
import type { LinkToken, LinkTokenStore } from './link-token-store.js';
import type { ServedBrands, SessionConnections } from './ports.js';
import type { InitiateSession, MintLinkToken } from './schema.js';

export const LINK_TOKEN_TTL_MS = 30 * 60_000;
export const LINK_TOKEN_SHAPE = /^lt_[0-9A-Za-z]{32,128}$/;
const BODY_LENGTH = 40;

/** The fields of an initiate a token binds, in the order a mismatch lists them. */
const BOUND = ['appUserId', 'redirectUri', 'brandId', 'connectionId'] as const;

export interface LinkTokenServiceDeps {
  tokens: LinkTokenStore;
  apps: AppStore;
  connections: Pick<SessionConnections, 'connectionOf'>;
  brands: ServedBrands;
  clock: Clock;
}

const invalidToken = () =>
  new AppError(
    'LINK_TOKEN_INVALID',
    'The link token is unknown, was already used, or has expired: mint a new one from your backend (POST /api/platform/v1/link-tokens).',
  );

export class LinkTokenService {
  constructor(private readonly deps: LinkTokenServiceDeps) {}

  /** `POST /link-tokens`: checked as the initiate it allows will be, so a token that mints is one that works. */
  async mint(principal: Principal, input: MintLinkToken): Promise<{ linkToken: string; expiresAt: Date }> {
    const app = await this.deps.apps.get(input.appId);
    // Another account's app is answered as an unknown one: nothing says it exists.
    if (!app || app.accountId !== principal.accountId)
      throw invalidField('body', 'appId', 'is not an app of this account');
    if (app.status !== 'ACTIVE')
      // Not stored by idempotency: the same request succeeds once the app is active again.
      throw new AppError(
        'CONFLICT',
        'The app is suspended: it cannot start connect sessions.',
        { appStatus: app.status },
        {},
        { storable: false },
      );
    if (!app.redirectUris.includes(input.redirectUri))
      throw invalidField('body', 'redirectUri', "is not one of the app's redirectUris");
    if (input.brandId !== undefined && this.deps.brands.brand(input.brandId) === undefined)
      throw invalidField('body', 'brandId', 'is not a brand of the catalog');
    if (input.connectionId !== undefined) {
      if (input.brandId === undefined)
        throw invalidField('body', 'brandId', "is required with connectionId (the connection's brand)");
      const { appUserId, brandId, connectionId } = input;
      await checkReconnect(this.deps.connections, principal.accountId, {
        appId: app.id,
        appUserId,
        brandId,
        connectionId,
      });
    }
    const linkToken = `lt_${randomBase62(BODY_LENGTH)}`;
    const now = this.deps.clock.now();
    const expiresAt = new Date(now.getTime() + LINK_TOKEN_TTL_MS);
    // Not a recovery point of the idempotent request: a retry after a crash mints a new token, and the one lost
    // with the crash, which nobody ever saw, expires unused.
    await this.deps.tokens.insert({
      hash: hashKey(linkToken),
      accountId: principal.accountId,
      appId: app.id,
      appUserId: input.appUserId,
      redirectUri: input.redirectUri,
      brandId: input.brandId ?? null,
      connectionId: input.connectionId ?? null,
      createdAt: now,
      expiresAt,
      usedAt: null,
      sessionId: null,
    });
    return { linkToken, expiresAt };
  }

  /**
   * The token an initiate names, if it is this account's, unused, unexpired, and binds what the initiate asks
   * for: 400 LINK_TOKEN_INVALID or LINK_TOKEN_MISMATCH otherwise (it is not spent: that is `spend`, once the
   * initiate passed every other check).
   */
  async check(principal: Principal, input: InitiateSession): Promise<LinkToken> {
    const value = input.linkToken;
    if (value === undefined)
      throw invalidField(
        'body',
        'linkToken',
        'is required with redirectUri: mint one from your backend (POST /api/platform/v1/link-tokens)',
      );
    const token = LINK_TOKEN_SHAPE.test(value) ? await this.deps.tokens.find(hashKey(value)) : null;
    // Another account's token is answered as an unknown one.
    if (
      !token ||
      token.accountId !== principal.accountId ||
      token.usedAt !== null ||
      this.deps.clock.now() >= token.expiresAt
    )
      throw invalidToken();
    const mismatched = mismatchesOf(token, principal.appId, input);
    if (mismatched.length > 0)
      throw new AppError(
        'LINK_TOKEN_MISMATCH',
        `The link token was minted for another ${mismatched.join(', ')}: the initiate must ask for what the token binds.`,
        { mismatched },
      );
    return token;
  }

  /** Spends the checked token for the session it starts; 400 LINK_TOKEN_INVALID when another initiate spent it first. */
  async spend(token: LinkToken, sessionId: string): Promise<void> {
    if (!(await this.deps.tokens.spend(token.hash, sessionId, this.deps.clock.now()))) throw invalidToken();
  }

  /** Unspends the token `sessionId` spent (its initiate was refused by a rate limit before it started anything). */
  async giveBack(token: LinkToken, sessionId: string): Promise<void> {
    await this.deps.tokens.unspend(token.hash, sessionId);
  }

  /** Deletes tokens expired for a day (kept that long so a late initiate is told "expired", not "unknown"). */
  sweep(limit: number): Promise<number> {
    return this.deps.tokens.sweep(new Date(this.deps.clock.now().getTime() - 24 * 3_600_000), limit);
  }
}

/** Which bound fields an initiate asks otherwise than its token (`appId`: the publishable key's app). */
export function mismatchesOf(token: LinkToken, appId: string | null | undefined, input: InitiateSession): string[] {
  const mismatched: string[] = token.appId === appId ? [] : ['appId'];
  for (const field of BOUND) {
    const bound = token[field];
    // A token that names no brand leaves the choice to the app or to Portico Connect; every other field binds,
    // absent included (a token for a new connection does not reconnect one).
    if (field === 'brandId' && bound === null) continue;
    if ((bound ?? undefined) !== input[field]) mismatched.push(field);
  }
  return mismatched;
}

/** A reconnect names a live connection of this app, app user and brand that waits for its patient to sign in again. */
export async function checkReconnect(
  connections: Pick<SessionConnections, 'connectionOf'>,
  accountId: string,
  input: { appId: string; appUserId: string; brandId: string; connectionId: string },
): Promise<void> {
  const record = await connections.connectionOf(accountId, input.connectionId);
  const { connection } = record ?? {};
  if (
    !record ||
    record.appUserId !== input.appUserId ||
    connection!.brandId !== input.brandId ||
    connection!.appId !== input.appId
  )
    throw invalidField('body', 'connectionId', 'is not a live connection of this app, app user and brand');
  if ((record.connection.status ?? 'ACTIVE') !== 'REAUTHORIZATION_REQUIRED')
    throw new AppError('CONFLICT', 'Only a connection in REAUTHORIZATION_REQUIRED is reconnected.', {
      status: record.connection.status ?? 'ACTIVE',
    });
}
