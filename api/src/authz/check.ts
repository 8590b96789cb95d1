// The authorization check: a Zanzibar-style evaluation of relation rewrites over tenant-scoped tuples.
// Default deny: an unknown type, relation, object or a walk deeper than MAX_DEPTH is a "no".
import type { TupleRepository } from './tuples.js';

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

export class AuthorizationService {
  constructor(
    private readonly tuples: TupleRepository,
    private readonly model = MODEL,
  ) {}

  /** Does `subject` hold `relation` on `object`, within `tenantId`? */
  async check(tenantId: string, subject: string, relation: string, object: string, depth = 0): Promise<boolean> {
    if (depth > MAX_DEPTH) return false;
    const type = object.slice(0, object.indexOf(':'));
    const rewrites = this.model[type]?.[relation];
    if (!rewrites) return false;
    for (const rewrite of rewrites) {
      if ('this' in rewrite) {
        for (const held of await this.tuples.subjects(tenantId, object, relation)) {
          if (held === subject) return true;
          const hash = held.indexOf('#');
          if (hash > 0 && (await this.check(tenantId, subject, held.slice(hash + 1), held.slice(0, hash), depth + 1))) return true;
        }
      } else if ('from' in rewrite) {
        for (const target of await this.tuples.subjects(tenantId, object, rewrite.from)) {
          if (await this.check(tenantId, subject, rewrite.computed, target, depth + 1)) return true;
        }
      } else if (await this.check(tenantId, subject, rewrite.computed, object, depth + 1)) {
        return true;
      }
    }
    return false;
  }
}
