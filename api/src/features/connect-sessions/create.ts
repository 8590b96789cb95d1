// Connect sessions, built (docs/architecture.md, "One shape for a feature"), in two steps because the connections
// stand between them: first the sessions' store, which the launch (features/connections) moves through its steps;
// then the link tokens and the service, given what they need of the connections (ports.ts).
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import type { AppUserService } from '../app-users/index.js';
import type { AppStore } from '../apps/index.js';
import { InitiateLimits } from './initiate-limits.js';
import { LinkTokenRepository } from './link-token-store.js';
import { LinkTokenService } from './link-tokens.js';
import type { ServedBrands, SessionConnections, SignIns } from './ports.js';
import { ConnectSessionService } from './service.js';
import { SessionRepository, type SessionStore } from './store.js';

export async function createSessionStore({ db, longDb, locks }: Infrastructure) {
  const store = new SessionRepository(db, locks);
  await store.init(longDb);
  return store;
}

export interface ConnectSessionUses {
  sessions: SessionStore;
  users: Pick<AppUserService, 'provision'>;
  connections: SessionConnections;
  signIns: SignIns;
  apps: AppStore;
  brands: ServedBrands;
}

export async function createConnectSessions(infrastructure: Infrastructure, uses: ConnectSessionUses) {
  const { config, db, longDb, locks, clock } = infrastructure;
  const tokens = new LinkTokenRepository(db, locks);
  await tokens.init(longDb);
  const linkTokens = new LinkTokenService({
    tokens,
    apps: uses.apps,
    connections: uses.connections,
    brands: uses.brands,
    clock,
  });
  const limits = new InitiateLimits({
    perUser: { limiter: infrastructure.limiter(config.initiateRateLimit), policy: config.initiateRateLimit },
    perKey: { limiter: infrastructure.limiter(config.initiateKeyRateLimit), policy: config.initiateKeyRateLimit },
  });
  return {
    linkTokenStore: tokens,
    linkTokens,
    service: new ConnectSessionService({ ...uses, limits, links: linkTokens, clock }),
  };
}
