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

/**
 * Relations written together with their object and never removed (`type#relation`): the object's own record
 * proves them, so a caller that has just read it may pass them to check() as known tuples. A patient's tenant is
 * written before the patient and names the tenant in the patient's _id, which never changes.
 */
export const FIXED_RELATIONS: ReadonlySet<string> = new Set(['patient#tenant']);

const fixed = (tuple: Tuple) =>
  FIXED_RELATIONS.has(`${tuple.object.slice(0, tuple.object.indexOf(':'))}#${tuple.relation}`);

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
    // A fixed relation is proved by its object's record too (known tuples): removing the stored tuple would not
    // take it away.
    if (fixed(tuple)) throw new Error(`${tuple.object}#${tuple.relation} is fixed: it is never revoked`);
    await this.tuples.delete(tenantId, tuple);
    this.granted?.invalidateAll();
  }

  /**
   * Does `subject` hold `relation` on `object`, within `tenantId`? `known`: tuples of fixed relations
   * (FIXED_RELATIONS) the caller read from their object's own record in that tenant; they are tried before the
   * stored ones, which are read only when the known ones do not grant. Since every such tuple is also stored
   * and never removed, the answer is the one the stored tuples alone give, one read sooner.
   */
  async check(
    tenantId: string,
    subject: string,
    relation: string,
    object: string,
    known: readonly Tuple[] = [],
  ): Promise<boolean> {
    for (const tuple of known) if (!fixed(tuple)) throw new Error(`${tuple.relation} is not a fixed relation`);
    if (this.granted) {
      const key = `${tenantId}|${subject}|${relation}|${object}`;
      const cached = await this.granted.getOrLoad(key, async () =>
        (await this.evaluate(tenantId, subject, relation, object, 0, false, known)) ? GRANTED : null,
      );
      if (cached) return true;
    }
    // Cached relation sets can lag behind tuples another process just added (a key issued from the command
    // line): a "no" is confirmed against the database before it is given.
    return this.evaluate(tenantId, subject, relation, object, 0, true, known);
  }

  private async evaluate(
    tenantId: string,
    subject: string,
    relation: string,
    object: string,
    depth: number,
    fresh: boolean,
    known: readonly Tuple[],
  ): Promise<boolean> {
    if (depth > MAX_DEPTH) return false;
    const type = object.slice(0, object.indexOf(':'));
    const rewrites = this.model[type]?.[relation];
    if (!rewrites) return false;
    const next = (relation: string, object: string) =>
      this.evaluate(tenantId, subject, relation, object, depth + 1, fresh, known);
    for (const rewrite of rewrites) {
      if ('this' in rewrite) {
        const grants = async (held: string) => {
          if (held === subject) return true;
          const hash = held.indexOf('#');
          return hash > 0 && next(held.slice(hash + 1), held.slice(0, hash));
        };
        if (await this.anyHeld(tenantId, object, relation, fresh, known, grants)) return true;
      } else if ('from' in rewrite) {
        const grants = (target: string) => next(rewrite.computed, target);
        if (await this.anyHeld(tenantId, object, rewrite.from, fresh, known, grants)) return true;
      } else if (await next(rewrite.computed, object)) {
        return true;
      }
    }
    return false;
  }

  /** Whether `grants` holds for a subject of `relation` on `object`: the known tuples' first, then the stored. */
  private async anyHeld(
    tenantId: string,
    object: string,
    relation: string,
    fresh: boolean,
    known: readonly Tuple[],
    grants: (subject: string) => Promise<boolean>,
  ): Promise<boolean> {
    for (const tuple of known) {
      if (tuple.object === object && tuple.relation === relation && (await grants(tuple.subject))) return true;
    }
    for (const held of await this.tuples.subjects(tenantId, object, relation, fresh)) {
      if (await grants(held)) return true;
    }
    return false;
  }
}
