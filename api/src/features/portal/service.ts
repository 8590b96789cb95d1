// The patient's own page (docs/connecting.md, "The patient's page"): an account mints a single-use link for one of its
// app users; the link, opened once within 15 minutes, gives that browser the page for 15 minutes (a cookie): the
// user's connected health systems, what each app may read, who read what (the access log in plain words), the log
// as FHIR JSON, and "Stop sharing", which revokes a connection exactly as DELETE /connections/{id} does.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Clock } from '#core/clock.js';
import { notFound } from '../../shared/http/errors.js';
import { UUID } from '../../shared/http/ids.js';
import { digest, matchesDigest } from '../../shared/http/secrets.js';
import type { AccessEntry, AccessLogService, AuditNames } from '../access-log/index.js';
import type { AppUserStore } from '../app-users/index.js';
import type { AppStore } from '../apps/index.js';
import { plainCategories } from '../clinical/index.js';
import type { ServedBrands } from '../connect-sessions/index.js';
import type { PortalSession, PortalSessionStore } from './store.js';

export const PORTAL_PATH = '/api/sdk/v1/portal';
/** How long a link opens the page, and how long the page answers its browser after. */
export const PORTAL_LINK_MS = 15 * 60_000;
export const PORTAL_PAGE_MS = 15 * 60_000;
/** The newest reads the page lists; the export carries up to EXPORT_LIMIT. */
export const PAGE_ENTRIES = 50;
export const EXPORT_LIMIT = 10_000;

export interface PortalDeps {
  store: PortalSessionStore;
  users: Pick<AppUserStore, 'find' | 'connection'>;
  apps: Pick<AppStore, 'get'>;
  brands: ServedBrands;
  syncStates: { state(connectionId: string): Promise<{ lastSyncedAt: Date | null } | null> };
  connections: { revoke(accountId: string, connectionId: string, by: 'patient'): Promise<boolean> };
  accessLog: Pick<AccessLogService, 'newest'>;
  clock: Clock;
}

export interface SharedConnection {
  id: string;
  brandId: string;
  brandName: string;
  hasLogo: boolean;
  appName: string;
  /** What the app may read, in plain words. */
  shared: string[];
  lastSyncedAt: Date | null;
  needsReconnect: boolean;
}

export interface PortalView {
  connections: SharedConnection[];
  reads: { entry: AccessEntry; names: AuditNames }[];
  /** What the page's forms carry, bound to its cookie. */
  formToken: string;
}

/** Why a link or a page cannot be shown. */
export type Refusal = 'link_invalid' | 'link_used' | 'link_expired' | 'page_expired';

export class PortalService {
  constructor(private readonly deps: PortalDeps) {}

  /** A link to the user's page (404 for a user this account never saw: there is nothing to show). */
  async mint(accountId: string, appUserId: string, origin: string): Promise<{ url: string; expiresAt: Date }> {
    if (!(await this.deps.users.find(accountId, appUserId))) throw notFound('app user');
    const secret = randomBytes(32).toString('base64url');
    const now = this.deps.clock.now();
    const session: PortalSession = {
      id: randomUUID(),
      accountId,
      appUserId,
      linkHash: digest(secret),
      createdAt: now,
      expiresAt: new Date(now.getTime() + PORTAL_LINK_MS),
      openedAt: null,
      pageHash: null,
      pageExpiresAt: null,
    };
    await this.deps.store.insert(session);
    return { url: `${origin}${PORTAL_PATH}/open/${session.id}.${secret}`, expiresAt: session.expiresAt };
  }

  /** The link visited: the page's cookie (`<id>.<secret>`) and how long it lives, once; a refusal after. */
  async open(token: string): Promise<{ cookie: string; expiresAt: Date } | Refusal> {
    const [id, secret] = parts(token);
    const session = id === undefined ? null : await this.deps.store.find(id);
    if (!session || !matchesDigest(secret, session.linkHash)) return 'link_invalid';
    if (session.openedAt !== null) return 'link_used';
    const now = this.deps.clock.now();
    if (now >= session.expiresAt) return 'link_expired';
    const pageSecret = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now.getTime() + PORTAL_PAGE_MS);
    const opened = await this.deps.store.open(session.id, now, {
      pageHash: digest(pageSecret),
      pageExpiresAt: expiresAt,
    });
    if (!opened) return 'link_used';
    return { cookie: `${session.id}.${pageSecret}`, expiresAt };
  }

  /** The session a page cookie names, while it lives; a refusal otherwise. */
  async session(cookie: string | undefined): Promise<PortalSession | Refusal> {
    const [id, secret] = parts(cookie ?? '');
    const session = id === undefined ? null : await this.deps.store.find(id);
    if (!session?.pageExpiresAt || !matchesDigest(secret, session.pageHash)) return 'page_expired';
    if (this.deps.clock.now() >= session.pageExpiresAt) return 'page_expired';
    return session;
  }

  /** What the page shows. */
  async view(session: PortalSession, cookie: string): Promise<PortalView> {
    const user = await this.deps.users.find(session.accountId, session.appUserId);
    const connections: SharedConnection[] = [];
    for (const connection of user?.connections ?? []) {
      const app = await this.deps.apps.get(connection.appId);
      const brand = this.deps.brands.brand(connection.brandId);
      const sync = connection.health ? await this.deps.syncStates.state(connection.id) : null;
      connections.push({
        id: connection.id,
        brandId: connection.brandId,
        brandName: brand?.name ?? 'Your health system',
        hasLogo: Boolean(brand?.logo),
        appName: app?.name ?? 'The app',
        shared: plainCategories(app?.grants.resourceTypes ?? []),
        lastSyncedAt: sync?.lastSyncedAt ?? null,
        needsReconnect: connection.status === 'REAUTHORIZATION_REQUIRED',
      });
    }
    const { entries, names } = await this.deps.accessLog.newest(session.accountId, session.appUserId, PAGE_ENTRIES);
    return {
      connections,
      reads: entries.map((entry) => ({ entry, names: names(entry) })),
      formToken: formToken(cookie),
    };
  }

  /**
   * "Stop sharing": the connection revoked as DELETE /connections/{id} revokes it (its tokens revoked at the health
   * system, `connection.revoked` with `by: "patient"`). False when the form is not this page's, or the connection is
   * not this user's live one.
   */
  async stopSharing(session: PortalSession, cookie: string, connectionId: string, token: string): Promise<boolean> {
    if (!matchesDigest(token, digest(formToken(cookie))) || !UUID.test(connectionId)) return false;
    const record = await this.deps.users.connection(session.accountId, connectionId);
    if (!record || record.appUserId !== session.appUserId || record.revokedAt !== null) return false;
    return this.deps.connections.revoke(session.accountId, connectionId, 'patient');
  }

  /** The user's reads for the export, newest first (up to EXPORT_LIMIT). */
  exportable(session: PortalSession): ReturnType<AccessLogService['newest']> {
    return this.deps.accessLog.newest(session.accountId, session.appUserId, EXPORT_LIMIT);
  }
}

/** The forms' token: derived from the page's cookie, which a page elsewhere cannot read. */
const formToken = (cookie: string): string => digest(`portal-form:${cookie}`);

/** `<uuid>.<secret>` → its parts; nothing for anything else. */
function parts(token: string): [string, string] | [] {
  const dot = token.indexOf('.');
  const id = token.slice(0, dot);
  return dot < 0 || token.length > 200 || !UUID.test(id) ? [] : [id, token.slice(dot + 1)];
}
