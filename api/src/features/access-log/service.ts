// The access log read back (docs/api.md, "The access log"): an app user's entries for its account, newest first, as
// AuditEvents; the same entries for the patient's own page; and their removal after the retention.
import type { Clock } from '#core/clock.js';
import type { CursorCodec } from '../../shared/http/cursor.js';
import { invalidField } from '../../shared/http/errors.js';
import type { AppStore } from '../apps/index.js';
import type { ServedBrands } from '../connect-sessions/index.js';
import { presentAuditEvent, type AuditNames } from './audit-event.js';
import type { AccessEntry, AccessLogStore } from './store.js';

const LIST_ROUTE = 'access-log';

export interface AccessLogDeps {
  store: AccessLogStore;
  apps: Pick<AppStore, 'get'>;
  brands: ServedBrands;
  cursors: CursorCodec;
}

export interface AccessPage {
  events: Record<string, unknown>[];
  nextCursor: string | null;
}

export class AccessLogService {
  constructor(private readonly deps: AccessLogDeps) {}

  /** A page of the user's entries (of this account only), newest first, from `since` when given. */
  async list(
    accountId: string,
    appUserId: string,
    query: { since?: Date; limit: number; cursor?: string },
  ): Promise<AccessPage> {
    // A cursor continues the list it came from: the same user, and the same `since`.
    const binding = { route: LIST_ROUTE, accountId };
    const scope = { u: appUserId, s: query.since?.toISOString() ?? '' };
    let after: { createdAt: Date; id: string } | undefined;
    if (query.cursor !== undefined) {
      const position = this.deps.cursors.decode(binding, query.cursor);
      after = { createdAt: new Date(position.c ?? ''), id: position.i ?? '' };
      if (position.u !== scope.u || position.s !== scope.s || Number.isNaN(after.createdAt.getTime()) || !after.id)
        throw invalidField('query', 'cursor', 'is not a cursor issued for this list');
    }
    const { items, hasMore } = await this.deps.store.list(accountId, appUserId, { ...query, after });
    const named = await this.namer(items);
    const last = items.at(-1);
    return {
      events: items.map((entry) => presentAuditEvent(entry, named(entry))),
      nextCursor:
        hasMore && last
          ? this.deps.cursors.encode(binding, { ...scope, c: last.createdAt.toISOString(), i: last.id })
          : null,
    };
  }

  /** The user's newest `limit` entries and their names, for the patient's page and its export. */
  async newest(
    accountId: string,
    appUserId: string,
    limit: number,
  ): Promise<{ entries: AccessEntry[]; names: (entry: AccessEntry) => AuditNames }> {
    const { items } = await this.deps.store.list(accountId, appUserId, { limit });
    return { entries: items, names: await this.namer(items) };
  }

  /** The app's and the health system's names for the entries (an app since deleted, or a brand no longer served, has none). */
  private async namer(entries: readonly AccessEntry[]): Promise<(entry: AccessEntry) => AuditNames> {
    const appNames = new Map<string, string | undefined>();
    for (const appId of new Set(entries.map((entry) => entry.appId)))
      appNames.set(appId, (await this.deps.apps.get(appId))?.name);
    return (entry) => {
      const app = appNames.get(entry.appId);
      const brand = this.deps.brands.brand(entry.brandId)?.name;
      return { ...(app !== undefined && { app }), ...(brand !== undefined && { brand }) };
    };
  }
}

/** Removes the entries older than the retention (PORTICO_AUDIT_RETENTION), a bounded round at a time (sweeps.ts). */
export class AccessLogRetention {
  constructor(
    private readonly store: Pick<AccessLogStore, 'sweep'>,
    private readonly clock: Clock,
    private readonly retentionMs: number,
  ) {}

  sweep(limit: number): Promise<number> {
    return this.store.sweep(new Date(this.clock.now().getTime() - this.retentionMs), limit);
  }
}
