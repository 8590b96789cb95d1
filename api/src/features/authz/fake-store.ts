// In-memory TupleStore for unit tests of the authorization check and of the services that grant;
// test/api/features/authz/store.test.ts holds it and TupleRepository to the same behaviour.
import { AuthorizationService } from './check.js';
import type { Tuple, TupleStore } from './tuples.js';

export class FakeTupleStore implements TupleStore {
  private readonly relations = new Map<string, Set<string>>();

  async write(tenantId: string, tuple: Tuple): Promise<void> {
    const id = `${tenantId}|${tuple.object}#${tuple.relation}`;
    let subjects = this.relations.get(id);
    if (!subjects) this.relations.set(id, (subjects = new Set()));
    subjects.add(tuple.subject);
  }

  async delete(tenantId: string, tuple: Tuple): Promise<void> {
    this.relations.get(`${tenantId}|${tuple.object}#${tuple.relation}`)?.delete(tuple.subject);
  }

  async subjects(tenantId: string, object: string, relation: string): Promise<string[]> {
    return [...(this.relations.get(`${tenantId}|${object}#${relation}`) ?? [])];
  }
}

/** The feature as createAuthz builds it, on the fake tuples (and without the check's cache): for unit tests. */
export function createFakeAuthz() {
  const tuples = new FakeTupleStore();
  return { tuples, service: new AuthorizationService(tuples) };
}
