// In-memory SessionStore for unit tests of ConnectSessionService.
import type { ConnectSession, SessionStore } from './store.js';

export class FakeSessionStore implements SessionStore {
  private readonly sessions = new Map<string, ConnectSession>();

  async insert(session: ConnectSession): Promise<void> {
    this.sessions.set(session.id, structuredClone(session));
  }

  async get(accountId: string, id: string): Promise<ConnectSession | null> {
    const session = this.sessions.get(id);
    return session && session.accountId === accountId ? structuredClone(session) : null;
  }

  async claim(claimed: ConnectSession, connectionId: string, now: Date, until: Date): Promise<ConnectSession | null> {
    const session = this.sessions.get(claimed.id);
    if (!session) return null;
    const free = session.status === 'PENDING' || (session.status === 'COMPLETING' && session.connectionId === claimed.connectionId && (session.claimUntil ?? now) < now);
    if (!free || session.status !== claimed.status) return null;
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
