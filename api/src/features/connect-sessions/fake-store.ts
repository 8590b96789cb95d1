// In-memory SessionStore for unit tests of ConnectSessionService; test/api/features/connect-sessions/store.test.ts
// holds it and SessionRepository to the same behaviour (docs/architecture.md, "Stores and fakes").
import { DuplicateKeyError } from '../../shared/infra/memory-versioned.js';
import type { ConnectSession, SessionStatus, SessionStore } from './store.js';

export class FakeSessionStore implements SessionStore {
  private readonly sessions = new Map<string, ConnectSession>();

  async insert(session: ConnectSession): Promise<void> {
    if (this.sessions.has(session.id)) throw new DuplicateKeyError(session.id); // as the unique _id refuses it
    this.sessions.set(session.id, structuredClone(session));
  }

  async get(accountId: string, id: string): Promise<ConnectSession | null> {
    const session = this.sessions.get(id);
    return session && session.accountId === accountId ? structuredClone(session) : null;
  }

  async find(id: string): Promise<ConnectSession | null> {
    const session = this.sessions.get(id);
    return session ? structuredClone(session) : null;
  }

  async move(id: string, from: SessionStatus[], changes: Partial<ConnectSession>): Promise<ConnectSession | null> {
    const session = this.sessions.get(id);
    if (!session || !from.includes(session.status)) return null;
    Object.assign(session, structuredClone({ ...changes, id }));
    return structuredClone(session);
  }

  async claim(claimed: ConnectSession, connectionId: string, now: Date, until: Date): Promise<ConnectSession | null> {
    const session = this.sessions.get(claimed.id);
    if (!session) return null;
    // The repository's condition, as the session read decides it: a pending one is claimed while it is still
    // pending; any other read stands for a claim that lapsed, taken over only while that same claim still stands.
    const lapsed = session.claimUntil != null && session.claimUntil < now;
    const free =
      claimed.status === 'PENDING'
        ? session.status === 'PENDING'
        : session.status === 'COMPLETING' && session.connectionId === claimed.connectionId && lapsed;
    if (!free) return null;
    Object.assign(session, { status: 'COMPLETING', connectionId, claimUntil: until });
    return structuredClone(session);
  }

  async complete(id: string, connectionId: string, at: Date): Promise<boolean> {
    const session = this.sessions.get(id);
    if (!session || session.status !== 'COMPLETING' || session.connectionId !== connectionId) return false;
    Object.assign(session, { status: 'COMPLETED', completedAt: at, claimUntil: null });
    return true;
  }
}
