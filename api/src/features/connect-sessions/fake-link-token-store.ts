// In-memory LinkTokenStore for unit tests of LinkTokenService and the connect flow;
// test/api/features/connect-sessions/link-token-store.test.ts holds it and LinkTokenRepository to the same
// behaviour (docs/architecture.md, "Stores and fakes"): a hash is minted once, and a token is spent once, while it
// is unused and unexpired.
import { DuplicateKeyError } from '../../shared/infra/memory-versioned.js';
import type { LinkToken, LinkTokenStore } from './link-token-store.js';

export class FakeLinkTokenStore implements LinkTokenStore {
  private readonly tokens = new Map<string, LinkToken>();

  async insert(token: LinkToken): Promise<void> {
    if (this.tokens.has(token.hash)) throw new DuplicateKeyError(token.hash); // as the unique _id refuses it
    this.tokens.set(token.hash, structuredClone(token));
  }

  async find(hash: string): Promise<LinkToken | null> {
    const token = this.tokens.get(hash);
    return token ? structuredClone(token) : null;
  }

  async spend(hash: string, sessionId: string, at: Date): Promise<boolean> {
    const token = this.tokens.get(hash);
    if (!token || token.usedAt !== null || token.expiresAt <= at) return false;
    Object.assign(token, { usedAt: new Date(at), sessionId });
    return true;
  }

  async unspend(hash: string, sessionId: string): Promise<void> {
    const token = this.tokens.get(hash);
    if (token && token.sessionId === sessionId) Object.assign(token, { usedAt: null, sessionId: null });
  }

  async sweep(before: Date, limit: number): Promise<number> {
    let deleted = 0;
    for (const [hash, token] of this.tokens) {
      if (deleted >= limit) break;
      if (token.expiresAt < before && this.tokens.delete(hash)) deleted++;
    }
    return deleted;
  }
}
