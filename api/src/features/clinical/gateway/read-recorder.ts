// The gateway's side of the access log (docs/api.md, "The access log"): each read and each refusal made into an
// entry and recorded, awaited before the read is answered. A refusal is recorded against the connection it names only
// when that connection is the caller's account's: another account's, or an unknown id, leaves no trace anywhere.
import type { Principal } from '../../../shared/http/auth.js';
import { UUID } from '../../../shared/http/ids.js';
import type { AppUserStore, ConnectionRecord } from '../../app-users/index.js';
import type { ReadInteraction, ReadLog, ReadSubject } from './read-log.js';

export class ReadRecorder {
  constructor(private readonly deps: { users: Pick<AppUserStore, 'connection'>; readLog: ReadLog }) {}

  /** Records a read (or, with `denied`, a refusal); resolves once it is stored. */
  record(
    subject: ReadSubject,
    principal: Principal,
    requestId: string,
    interaction: ReadInteraction,
    resourceType: string | null,
    count: number,
    denied?: string,
  ): Promise<void> {
    return this.deps.readLog.record({
      ...subject,
      interaction,
      resourceType,
      count,
      ...(denied !== undefined && { denied }),
      requestId,
      keyId: principal.keyId,
    });
  }

  /** A refusal before the connection was read (the key's scope): recorded when the id is the caller's account's. */
  async refusedUnread(
    principal: Principal,
    requestId: string,
    connectionId: string | undefined,
    interaction: ReadInteraction,
    type: string | null,
    reason: string,
  ): Promise<void> {
    // A key of no app (never one that reaches the gateway's checks) is not recorded under the connection's app.
    if (principal.appId === null || connectionId === undefined || !UUID.test(connectionId)) return;
    const record = await this.deps.users.connection(principal.accountId, connectionId);
    if (record) await this.record(subjectOf(principal, record), principal, requestId, interaction, type, 0, reason);
  }
}

/** Whose record a request read: the caller's app, and the connection's user and health system. */
export function subjectOf(principal: Principal, record: ConnectionRecord): ReadSubject {
  return {
    accountId: principal.accountId,
    appId: principal.appId ?? record.appId,
    appUserId: record.appUserId,
    connectionId: record.id,
    brandId: record.brandId,
  };
}
