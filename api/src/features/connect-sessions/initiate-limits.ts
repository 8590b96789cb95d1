// The two token buckets an initiate counts against (docs/api.md, Abuse limits): one per (customer account, app
// user), whose appUserId is case-folded so that "RL-x" and "rl-x" share it, and one per publishable key, so
// that one key cannot provision app users without end by inventing new ids. Every answer to an initiate made
// with a valid key carries the RateLimit fields of both: taken when the request took its tokens, looked at
// (taking nothing) when it was refused before.
import type { Principal } from '../../shared/http/auth.js';
import { AppError } from '../../shared/http/errors.js';
import {
  rateLimitFields,
  type RateDecision,
  type RateLimiter,
  type RatePolicy,
} from '../../shared/infra/rate-limit.js';

export interface InitiateLimitsDeps {
  perUser: { limiter: RateLimiter; policy: RatePolicy };
  perKey: { limiter: RateLimiter; policy: RatePolicy };
}

/** An appUserId is ASCII (`A-Z a-z 0-9 . _ : @ -`), so case folding it is lower-casing it. */
export const caseFolded = (appUserId: string): string => appUserId.toLowerCase();

export class InitiateLimits {
  constructor(private readonly deps: InitiateLimitsDeps) {}

  /**
   * Takes a token from the user's bucket and one from the key's, and returns the fields of both; an empty bucket
   * is a 429 carrying them. Neither bucket pays for the other's refusal: an empty key bucket (anyone holding
   * the public key can empty it) is seen first and takes nothing from the user's, and an empty user bucket
   * takes nothing from the key's. Only a request that finds the key's last token taken between its look and
   * its take (two Redis calls apart) has spent a user token for nothing.
   */
  async take(principal: Principal, appUserId: string): Promise<Record<string, string>> {
    const { perUser, perKey } = this.deps;
    const looked = await perKey.limiter.peek(keyBucket(principal));
    if (!looked.allowed) throw this.refusal(await perUser.limiter.peek(userBucket(principal, appUserId)), looked);
    const user = await perUser.limiter.take(userBucket(principal, appUserId));
    if (!user.allowed) throw this.refusal(user, looked);
    const key = await perKey.limiter.take(keyBucket(principal));
    if (!key.allowed) throw this.refusal(user, key);
    return this.fields(user, key);
  }

  /** The fields as the buckets stand, taking nothing: the user's only when the request named one. */
  async peek(principal: Principal, appUserId?: string): Promise<Record<string, string>> {
    const { perUser, perKey } = this.deps;
    const [user, key] = await Promise.all([
      appUserId === undefined ? undefined : perUser.limiter.peek(userBucket(principal, appUserId)),
      perKey.limiter.peek(keyBucket(principal)),
    ]);
    return this.fields(user, key);
  }

  /** A 429 naming the bucket that refused (the user's first), waiting for every empty one. */
  private refusal(user: RateDecision, key: RateDecision): AppError {
    const waitMs = Math.max(user.allowed ? 0 : user.retryAfterMs, key.allowed ? 0 : key.retryAfterMs);
    const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
    const detail = !user.allowed
      ? 'Too many connect sessions initiated for this app user; retry after the time given.'
      : 'Too many connect sessions initiated with this publishable key; retry after the time given.';
    return new AppError(
      'RATE_LIMITED',
      detail,
      { retryAfterSeconds },
      { ...this.fields(user, key), 'Retry-After': String(retryAfterSeconds) },
      { storable: false },
    );
  }

  private fields(user: RateDecision | undefined, key: RateDecision): Record<string, string> {
    const { perUser, perKey } = this.deps;
    const fields = rateLimitFields([
      ...(user ? [{ policy: perUser.policy, decision: user }] : []),
      { policy: perKey.policy, decision: key },
    ]);
    // Retry-After belongs to a refusal (the 429 sets it); an answer refused for another reason does not wait.
    delete fields['Retry-After'];
    return fields;
  }
}

const userBucket = (principal: Principal, appUserId: string) => `${principal.accountId}\n${caseFolded(appUserId)}`;
const keyBucket = (principal: Principal) => `key\n${principal.keyId}`;
