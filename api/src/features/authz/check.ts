// The authorization check: a Zanzibar-style evaluation of relation rewrites over tenant-scoped tuples.
// Default deny: an unknown type, relation, object or a walk deeper than MAX_DEPTH is a "no".
import type { SharedCache } from '../../shared/infra/cache.js';
import type { Tuple, TupleStore } from './tuples.js';

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

const GRANTED = Object.freeze({ granted: true as const });

/**
 * Checks, and the only writer of tuples. Granted decisions are cached: adding tuples can only grant more,
 * so cached "yes" answers stay true until a tuple is removed, which forgets them all (on every replica).
 */
export class AuthorizationService {
  constructor(
    private readonly tuples: TupleStore,
    private readonly granted?: SharedCache<typeof GRANTED>,
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
    if (this.granted) {
      const key = `${tenantId}|${subject}|${relation}|${object}`;
      const cached = await this.granted.getOrLoad(key, async () =>
        (await this.evaluate(tenantId, subject, relation, object, 0, false)) ? GRANTED : null,
      );
      if (cached) return true;
    }
    // Cached relation sets can lag behind tuples another process just added (a key issued from the command
    // line): a "no" is confirmed against the database before it is given.
    return this.evaluate(tenantId, subject, relation, object, 0, true);
  }

  private async evaluate(
    tenantId: string,
    subject: string,
    relation: string,
    object: string,
    depth: number,
    fresh: boolean,
  ): Promise<boolean> {
    if (depth > MAX_DEPTH) return false;
    const type = object.slice(0, object.indexOf(':'));
    const rewrites = this.model[type]?.[relation];
    if (!rewrites) return false;
    for (const rewrite of rewrites) {
      if ('this' in rewrite) {
        for (const held of await this.tuples.subjects(tenantId, object, relation, fresh)) {
          if (held === subject) return true;
          const hash = held.indexOf('#');
          if (
            hash > 0 &&
            (await this.evaluate(tenantId, subject, held.slice(hash + 1), held.slice(0, hash), depth + 1, fresh))
          )
            return true;
        }
      } else if ('from' in rewrite) {
        for (const target of await this.tuples.subjects(tenantId, object, rewrite.from, fresh)) {
          if (await this.evaluate(tenantId, subject, rewrite.computed, target, depth + 1, fresh)) return true;
        }
      } else if (await this.evaluate(tenantId, subject, rewrite.computed, object, depth + 1, fresh)) {
        return true;
      }
    }
    return false;
  }
}
