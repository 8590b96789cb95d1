// In-memory SessionStore for unit tests of ConnectSessionService.
import type { ConnectSession, SessionStore } from './repository.js';

export class FakeSessionStore implements SessionStore {
  private readonly sessions = new Map<string, ConnectSession>();

  async insert(session: ConnectSession): Promise<void> {
    this.sessions.set(session.id, structuredClone(session));
  }

  async get(accountId: string, id: string): Promise<ConnectSession | null> {
    const session = this.sessions.get(id);
    return session && session.accountId === accountId ? structuredClone(session) : null;
  }

  async complete(id: string, connectionId: string, at: Date): Promise<boolean> {
    const session = this.sessions.get(id);
    if (!session || session.status !== 'PENDING') return false;
    Object.assign(session, { status: 'COMPLETED', completedAt: at, connectionId });
    return true;
  }
}
