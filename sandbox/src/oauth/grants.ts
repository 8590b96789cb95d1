// Everything the authorization server remembers, in memory: sign-in requests waiting for the patient, codes,
// and token families. A family is one authorization (one code) and every access and refresh token issued from
// it, so that a replayed code or refresh token can revoke all of them at once, as RFC 6749 §4.1.2 and the OAuth
// security BCP (RFC 9700 §4.14) ask.
import { randomBytes } from 'node:crypto';

/** 256 random bits, base64url: opaque, unguessable tokens, codes and request ids. */
export const randomToken = (): string => randomBytes(32).toString('base64url');

export const PENDING_TTL_MS = 10 * 60_000;
export const CODE_TTL_MS = 60_000;

export interface AuthorizationRequest {
  brandKey: string;
  clientId: string;
  redirectUri: string;
  state: string;
  scope: string;
  codeChallenge: string;
}

interface Pending extends AuthorizationRequest {
  expiresAt: number;
}

export interface Family {
  id: string;
  brandKey: string;
  clientId: string;
  patientId: string;
  scope: string;
  revoked: boolean;
}

interface Code {
  family: Family;
  redirectUri: string;
  codeChallenge: string;
  expiresAt: number;
  used: boolean;
}

export interface AccessToken {
  family: Family;
  expiresAt: number;
  revoked: boolean;
}

interface RefreshToken {
  family: Family;
  retired: boolean;
}

export class Grants {
  private readonly pending = new Map<string, Pending>();
  private readonly codes = new Map<string, Code>();
  private readonly accessTokens = new Map<string, AccessToken>();
  private readonly refreshTokens = new Map<string, RefreshToken>();
  /** Client assertion ids seen, with when they stop mattering (their exp): jti replay protection. */
  private readonly assertionIds = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  holdRequest(request: AuthorizationRequest): string {
    const id = randomToken();
    this.pending.set(id, { ...request, expiresAt: this.now() + PENDING_TTL_MS });
    return id;
  }

  /** A waiting sign-in request; `take` makes it single use. */
  request(id: string, take = false): AuthorizationRequest | undefined {
    const found = this.pending.get(id);
    if (!found || found.expiresAt <= this.now()) {
      this.pending.delete(id);
      return undefined;
    }
    if (take) this.pending.delete(id);
    return found;
  }

  issueCode(request: AuthorizationRequest, patientId: string): string {
    const code = randomToken();
    const family: Family = {
      id: randomToken(),
      brandKey: request.brandKey,
      clientId: request.clientId,
      patientId,
      scope: request.scope,
      revoked: false,
    };
    this.codes.set(code, {
      family,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      expiresAt: this.now() + CODE_TTL_MS,
      used: false,
    });
    return code;
  }

  code(value: string): Code | undefined {
    return this.codes.get(value);
  }

  issueAccessToken(family: Family, ttlSeconds: number): string {
    const token = randomToken();
    this.accessTokens.set(token, { family, expiresAt: this.now() + ttlSeconds * 1000, revoked: false });
    return token;
  }

  issueRefreshToken(family: Family): string {
    const token = randomToken();
    this.refreshTokens.set(token, { family, retired: false });
    return token;
  }

  /** A usable access token: known, unexpired, not revoked, its family not revoked. */
  accessToken(value: string): AccessToken | undefined {
    const found = this.accessTokens.get(value);
    if (!found || found.revoked || found.family.revoked || found.expiresAt <= this.now()) return undefined;
    return found;
  }

  refreshToken(value: string): RefreshToken | undefined {
    return this.refreshTokens.get(value);
  }

  expireAccessTokens(): void {
    for (const token of this.accessTokens.values()) token.expiresAt = Math.min(token.expiresAt, this.now());
  }

  /** RFC 7009: the token if it is this client's at this brand (a refresh token takes its family with it); others are ignored. */
  revoke(value: string, brandKey: string, clientId: string): void {
    const owns = (family: Family) => family.brandKey === brandKey && family.clientId === clientId;
    const access = this.accessTokens.get(value);
    if (access && owns(access.family)) access.revoked = true;
    const refresh = this.refreshTokens.get(value);
    if (refresh && owns(refresh.family)) refresh.family.revoked = true;
  }

  /** Records a client assertion's jti; false when it was seen before (a replay). */
  firstUseOfAssertion(clientId: string, jti: string, expiresAt: number): boolean {
    const now = this.now();
    for (const [key, until] of this.assertionIds) if (until < now) this.assertionIds.delete(key);
    const key = `${clientId}\n${jti}`;
    if (this.assertionIds.has(key)) return false;
    this.assertionIds.set(key, expiresAt);
    return true;
  }
}
