// Patient profiles. Reads answer as one order says (docs/architecture.md, Authorization): scope (route guard) →
// relation-tuple check → tenant membership → tenant-filtered read. Steps 2-3 fail with one uniform 403, so an id
// never reveals whether it exists in another tenant. (get() reads first, within the caller's tenant, and gives
// the check the tenant tuple the patient proves: the same answers, one database read fewer.)
import { randomUUID } from 'node:crypto';
import type { AccountStore } from '../accounts/index.js';
import type { AuthorizationService } from '../authz/index.js';
import type { Clock } from '#core/clock.js';
import type { EventOutbox } from '../events/index.js';
import { ACCESS_DENIED_DETAIL, type Principal } from '../../shared/http/auth.js';
import { preconditionHolds, type Precondition } from '../../shared/http/conditional.js';
import { AppError, invalidField, notFound } from '../../shared/http/errors.js';
import type { Patient, PatientStore } from './store.js';
import type { CreatePatient } from './schema.js';
import { UUID } from '../../shared/http/ids.js';

export interface PatientServiceDeps {
  patients: PatientStore;
  authz: AuthorizationService;
  accounts: AccountStore;
  outbox: EventOutbox;
  clock: Clock;
}

export class PatientService {
  constructor(private readonly deps: PatientServiceDeps) {}

  async create(principal: Principal, input: CreatePatient): Promise<Patient> {
    const now = this.deps.clock.now();
    if (input.birthDate !== undefined && input.birthDate > now.toISOString().slice(0, 10)) {
      throw invalidField('body', 'birthDate', 'must not be in the future');
    }
    const patient: Patient = {
      ...input,
      id: randomUUID(),
      tenantId: principal.accountId,
      createdAt: now,
      updatedAt: now,
      version: 1,
      deletedAt: null,
    };
    // The tenant tuple first: a patient is never readable without it, and a stray tuple grants nothing.
    await this.deps.authz.grant(patient.tenantId, {
      object: `patient:${patient.id}`,
      relation: 'tenant',
      subject: `customer_account:${patient.tenantId}`,
    });
    const event = this.deps.outbox.event('patient.created', patient.tenantId, `patient:${patient.id}`, {
      patientId: patient.id,
    });
    await this.deps.outbox.record(
      [event],
      this.deps.patients.target(patient.tenantId, patient.id, 1),
      async (changeId) => {
        await this.deps.patients.insert(patient, changeId);
        return patient;
      },
    );
    return patient;
  }

  /**
   * The tenant-filtered read comes first, and the check takes the patient's tenant tuple from it when it is there
   * (a fixed relation: written before the patient, never removed), so a patient never read before costs one
   * database read, not two. The answers are those of the documented order: the read names the caller's tenant
   * (another tenant's patient is never read, so absent and foreign look alike), and a patient that is not there
   * is checked against the stored tuples as before (403, or 404 for a tuple whose patient was never written).
   */
  async get(principal: Principal, id: string): Promise<Patient> {
    if (!UUID.test(id)) throw accessDenied();
    const patient = await this.deps.patients.find(principal.accountId, id);
    await this.authorize(principal, 'read', id, patient);
    if (!patient || patient.deletedAt !== null) throw notFound('patient');
    return patient;
  }

  /** Authorization (403), then existence (404), then If-Match (412), then a delete conditional on the version read. */
  async delete(principal: Principal, id: string, precondition: Precondition | undefined): Promise<void> {
    await this.authorize(principal, 'write', id);
    const tenantId = principal.accountId;
    for (let attempt = 1; ; attempt++) {
      const current = await this.deps.patients.findStored(tenantId, id);
      if (!current || current.deletedAt !== null) throw notFound('patient');
      if (!preconditionHolds(precondition, String(current.version))) {
        throw new AppError('PRECONDITION_FAILED', 'The patient has changed since the given entity tag.', {
          currentVersion: String(current.version),
        });
      }
      const event = this.deps.outbox.event('patient.deleted', tenantId, `patient:${id}`, { patientId: id });
      const target = this.deps.patients.target(tenantId, id, current.version + 1);
      const deleted = await this.deps.outbox.record([event], target, async (changeId) =>
        (await this.deps.patients.softDelete(tenantId, id, current.version, this.deps.clock.now(), changeId))
          ? true
          : undefined,
      );
      if (deleted) return;
      if (attempt >= 5)
        throw new AppError(
          'CONFLICT',
          'The patient is being changed concurrently; retry.',
          {},
          {},
          { storable: false },
        );
    }
  }

  /** Steps 2 and 3 of that order; any "no" is the same 403. `stored`: the patient, when the caller read it. */
  private async authorize(
    principal: Principal,
    permission: 'read' | 'write',
    id: string,
    stored?: Patient | null,
  ): Promise<void> {
    if (!UUID.test(id)) throw accessDenied();
    const object = `patient:${id}`;
    const known = stored ? [{ object, relation: 'tenant', subject: `customer_account:${stored.tenantId}` }] : [];
    const allowed = await this.deps.authz.check(
      principal.accountId,
      `api_key:${principal.keyId}`,
      permission,
      object,
      known,
    );
    if (!allowed) throw accessDenied();
    const account = await this.deps.accounts.get(principal.accountId);
    if (account?.status !== 'ACTIVE') throw accessDenied();
  }
}

const accessDenied = () => new AppError('PLATFORM_ACCESS_DENIED', ACCESS_DENIED_DETAIL);
