// In-memory PortalSessionStore; test/api/features/portal/store.test.ts holds it and
// PortalSessionRepository to the same behaviour (docs/architecture.md, "Stores and fakes").
import { DuplicateKeyError } from '../../shared/infra/memory-versioned.js';
import type { PortalSession, PortalSessionStore } from './store.js';

export class FakePortalSessionStore implements PortalSessionStore {
  private readonly sessions = new Map<string, PortalSession>();

  async insert(session: PortalSession): Promise<void> {
    if (this.sessions.has(session.id)) throw new DuplicateKeyError(session.id);
    this.sessions.set(session.id, structuredClone(session));
  }

  async find(id: string): Promise<PortalSession | null> {
    const session = this.sessions.get(id);
    return session ? structuredClone(session) : null;
  }

  async open(id: string, at: Date, page: { pageHash: string; pageExpiresAt: Date }): Promise<PortalSession | null> {
    const session = this.sessions.get(id);
    if (!session || session.openedAt !== null || session.expiresAt <= at) return null;
    Object.assign(session, { openedAt: new Date(at), ...structuredClone(page) });
    return structuredClone(session);
  }

  async sweep(before: Date, limit: number): Promise<number> {
    let deleted = 0;
    for (const [id, session] of this.sessions)
      if (
        deleted < limit &&
        session.expiresAt < before &&
        (session.pageExpiresAt === null || session.pageExpiresAt < before)
      ) {
        this.sessions.delete(id);
        deleted++;
      }
    return deleted;
  }
}
