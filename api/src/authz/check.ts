// The authorization check: a Zanzibar-style evaluation of relation rewrites over tenant-scoped tuples.
// Default deny: an unknown type, relation, object or a walk deeper than MAX_DEPTH is a "no".
import type { SharedCache } from '../infra/cache.js';
import type { Tuple, TupleRepository } from './tuples.js';

type Rewrite =
  | { this: true } // tuples written for this relation
  | { computed: string } // another relation on the same object
  | { from: string; computed: string }; // follow `from` tuples, then `computed` on what they point at

/** Who may do what. Read a rule as: relation ← any of its rewrites. */
export const MODEL: Record<string, Record<string, Rewrite[]>> = {
  customer_account: {
    member: [{ this: true }],
  },
  patient: {
    tenant: [{ this: true }],
    read: [{ from: 'tenant', computed: 'member' }],
    write: [{ from: 'tenant', computed: 'member' }],
  },
};

export const MAX_DEPTH = 8;

/**
 * Checks, and the only writer of tuples. Granted decisions are cached: adding tuples can only grant more,
 * so cached "yes" answers stay true until a tuple is removed, which forgets them all (on every replica).
 */
export class AuthorizationService {
  constructor(
    private readonly tuples: TupleRepository,
    private readonly granted?: SharedCache<true[]>,
    private readonly model = MODEL,
  ) {}

  async grant(tenantId: string, tuple: Tuple): Promise<void> {
    await this.tuples.write(tenantId, tuple);
  }

  async revoke(tenantId: string, tuple: Tuple): Promise<void> {
    await this.tuples.delete(tenantId, tuple);
    this.granted?.invalidateAll();
  }

  /** Does `subject` hold `relation` on `object`, within `tenantId`? */
  async check(tenantId: string, subject: string, relation: string, object: string): Promise<boolean> {
    const key = `${tenantId}|${subject}|${relation}|${object}`;
    if (this.granted?.peek(key)) return true;
    const allowed = await this.evaluate(tenantId, subject, relation, object, 0);
    if (allowed) await this.granted?.getOrLoad(key, async () => [true]);
    return allowed;
  }

  private async evaluate(tenantId: string, subject: string, relation: string, object: string, depth: number): Promise<boolean> {
    if (depth > MAX_DEPTH) return false;
    const type = object.slice(0, object.indexOf(':'));
    const rewrites = this.model[type]?.[relation];
    if (!rewrites) return false;
    for (const rewrite of rewrites) {
      if ('this' in rewrite) {
        for (const held of await this.tuples.subjects(tenantId, object, relation)) {
          if (held === subject) return true;
          const hash = held.indexOf('#');
          if (hash > 0 && (await this.evaluate(tenantId, subject, held.slice(hash + 1), held.slice(0, hash), depth + 1))) return true;
        }
      } else if ('from' in rewrite) {
        for (const target of await this.tuples.subjects(tenantId, object, rewrite.from)) {
          if (await this.evaluate(tenantId, subject, rewrite.computed, target, depth + 1)) return true;
        }
      } else if (await this.evaluate(tenantId, subject, rewrite.computed, object, depth + 1)) {
        return true;
      }
    }
    return false;
  }
}
