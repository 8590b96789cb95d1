import { expect } from 'chai';
import { AuthorizationService, FIXED_RELATIONS, MAX_DEPTH } from '../../../../api/src/features/authz/check.js';
import { FakeTupleStore } from '../../../../api/src/features/authz/fake-store.js';

/** The fake tuple store, written as `object#relation@subject` and counting reads to prove walks end. */
class MemoryTuples extends FakeTupleStore {
  reads = 0;

  add(tenantId: string, written: string): this {
    const hash = written.indexOf('#');
    const at = written.indexOf('@');
    void this.write(tenantId, {
      object: written.slice(0, hash),
      relation: written.slice(hash + 1, at),
      subject: written.slice(at + 1),
    });
    return this;
  }

  override async subjects(tenantId: string, object: string, relation: string): Promise<string[]> {
    this.reads++;
    return super.subjects(tenantId, object, relation);
  }
}

const service = (tuples: MemoryTuples) => new AuthorizationService(tuples);

describe('authz: the relation-tuple check', () => {
  const A = 'acct-a';
  const B = 'acct-b';

  /** Patient P of account A; key K is a member of A. */
  const tenantA = () =>
    new MemoryTuples()
      .add(A, `patient:P#tenant@customer_account:${A}`)
      .add(A, `customer_account:${A}#member@api_key:K`);

  it('denies everything by default', async () => {
    const authz = service(new MemoryTuples());
    expect(await authz.check(A, 'api_key:K', 'read', 'patient:P')).to.equal(false);
    expect(await authz.check(A, 'api_key:K', 'member', `customer_account:${A}`)).to.equal(false);
  });

  it('grants a directly written relation', async () => {
    expect(await service(tenantA()).check(A, 'api_key:K', 'member', `customer_account:${A}`)).to.equal(true);
  });

  it('follows patient#tenant to customer_account#member (tuple to userset) for read and write', async () => {
    const authz = service(tenantA());
    expect(await authz.check(A, 'api_key:K', 'read', 'patient:P')).to.equal(true);
    expect(await authz.check(A, 'api_key:K', 'write', 'patient:P')).to.equal(true);
  });

  it('denies a key that is not a member, and a patient of no tenant', async () => {
    const authz = service(tenantA().add(A, `customer_account:${A}#member@api_key:Other`));
    expect(await authz.check(A, 'api_key:Stranger', 'read', 'patient:P')).to.equal(false);
    expect(await authz.check(A, 'api_key:K', 'read', 'patient:Unknown')).to.equal(false);
  });

  it('denies unknown object types and relations, even when a tuple names them', async () => {
    const tuples = tenantA().add(A, 'document:D#read@api_key:K').add(A, 'patient:P#delete@api_key:K');
    const authz = service(tuples);
    expect(await authz.check(A, 'api_key:K', 'read', 'document:D')).to.equal(false);
    expect(await authz.check(A, 'api_key:K', 'delete', 'patient:P')).to.equal(false);
    expect(await authz.check(A, 'api_key:K', 'read', 'patient')).to.equal(false);
    expect(await authz.check(A, 'api_key:K', 'read', 'P')).to.equal(false);
  });

  it('does not treat a direct tuple on a computed relation as a grant', async () => {
    // patient#read is computed from the tenant's members; a stray "read" tuple must not bypass the model.
    const authz = service(new MemoryTuples().add(A, 'patient:P#read@api_key:K'));
    expect(await authz.check(A, 'api_key:K', 'read', 'patient:P')).to.equal(false);
  });

  it('expands usersets written as subjects (customer_account:A#member)', async () => {
    const tuples = new MemoryTuples()
      .add(A, `customer_account:${A}#member@api_key:K`)
      .add(A, `customer_account:Parent#member@customer_account:${A}#member`)
      .add(A, 'patient:Q#tenant@customer_account:Parent');
    const authz = service(tuples);
    expect(await authz.check(A, 'api_key:K', 'member', 'customer_account:Parent')).to.equal(true);
    expect(await authz.check(A, 'api_key:K', 'read', 'patient:Q')).to.equal(true);
    expect(await authz.check(A, 'api_key:Nobody', 'read', 'patient:Q')).to.equal(false);
  });

  it('keeps tenants apart: the same tuples in another tenant grant nothing', async () => {
    const authz = service(tenantA());
    expect(await authz.check(B, 'api_key:K', 'read', 'patient:P')).to.equal(false);
    expect(await authz.check(B, 'api_key:K', 'member', `customer_account:${A}`)).to.equal(false);
  });

  it('ends a cycle of usersets with a "no", after a bounded walk', async () => {
    const tuples = new MemoryTuples()
      .add(A, 'customer_account:X#member@customer_account:Y#member')
      .add(A, 'customer_account:Y#member@customer_account:X#member')
      .add(A, 'patient:P#tenant@customer_account:X');
    const authz = service(tuples);
    expect(await authz.check(A, 'api_key:K', 'read', 'patient:P')).to.equal(false);
    expect(await authz.check(A, 'api_key:K', 'member', 'customer_account:X')).to.equal(false);
    expect(tuples.reads).to.be.below(10 * (MAX_DEPTH + 2));
  });

  it('follows a short chain of usersets but denies one deeper than MAX_DEPTH', async () => {
    const chain = (length: number) => {
      const tuples = new MemoryTuples();
      for (let i = 0; i < length; i++) tuples.add(A, `customer_account:c${i}#member@customer_account:c${i + 1}#member`);
      return tuples.add(A, `customer_account:c${length}#member@api_key:K`);
    };
    expect(await service(chain(3)).check(A, 'api_key:K', 'member', 'customer_account:c0')).to.equal(true);
    const deep = chain(MAX_DEPTH * 3);
    expect(await service(deep).check(A, 'api_key:K', 'member', 'customer_account:c0')).to.equal(false);
    expect(deep.reads).to.be.at.most(MAX_DEPTH + 2);
  });

  it('stops granting once a membership is revoked, and grants once it is written', async () => {
    const authz = service(new MemoryTuples().add(A, 'patient:P#tenant@customer_account:A'));
    const membership = { object: 'customer_account:A', relation: 'member', subject: 'api_key:K' };
    expect(await authz.check(A, 'api_key:K', 'read', 'patient:P')).to.equal(false);
    await authz.grant(A, membership);
    expect(await authz.check(A, 'api_key:K', 'read', 'patient:P')).to.equal(true);
    await authz.revoke(A, membership);
    expect(await authz.check(A, 'api_key:K', 'read', 'patient:P')).to.equal(false);
  });

  describe('known tuples (a fixed relation read from its object)', () => {
    const tenantOfP = { object: 'patient:P', relation: 'tenant', subject: `customer_account:${A}` };
    /** Only the membership is stored: what the check reads shows whether it needed the tenant tuple. */
    const membersOnly = () => new MemoryTuples().add(A, `customer_account:${A}#member@api_key:K`);

    it("grants with the patient's tenant taken from the patient, reading only the membership", async () => {
      const tuples = membersOnly();
      expect(await service(tuples).check(A, 'api_key:K', 'read', 'patient:P', [tenantOfP])).to.equal(true);
      expect(tuples.reads).to.equal(1);
    });

    it('grants nothing by itself: a key that is not a member is still denied', async () => {
      const authz = service(membersOnly());
      expect(await authz.check(A, 'api_key:Stranger', 'read', 'patient:P', [tenantOfP])).to.equal(false);
      expect(await authz.check(B, 'api_key:K', 'read', 'patient:P', [tenantOfP])).to.equal(false);
    });

    it('adds to the stored tuples: when the known ones do not grant, the stored ones still may', async () => {
      const tuples = membersOnly()
        .add(A, 'customer_account:Parent#member@api_key:Ops')
        .add(A, 'patient:P#tenant@customer_account:Parent');
      expect(await service(tuples).check(A, 'api_key:Ops', 'read', 'patient:P', [tenantOfP])).to.equal(true);
    });

    it('is refused for a relation that is not fixed, and a fixed relation is never revoked', async () => {
      const authz = service(membersOnly());
      const membership = { object: `customer_account:${A}`, relation: 'member', subject: 'api_key:K' };
      expect(FIXED_RELATIONS.has('customer_account#member')).to.equal(false);
      let refused: unknown;
      await authz.check(A, 'api_key:K', 'read', 'patient:P', [membership]).catch((error: unknown) => (refused = error));
      expect(refused).to.be.an('error');
      refused = undefined;
      await authz.revoke(A, tenantOfP).catch((error: unknown) => (refused = error));
      expect(refused).to.be.an('error');
    });
  });
});
