// The start-up every entry point shares (main.ts, `portico dispatch`, `portico admin`): configuration → connections
// → services, and the reverse to stop. What each then starts (the server, the dispatcher, one command) is its own.
import type { Logger } from 'pino';
import { systemClock } from '#core/clock.js';
import { openConnections, type OpenConnections } from '#core/infra/connections.js';
import type { Config } from './config.js';
import { buildServices, type Services } from './wiring.js';

export interface Started {
  connections: OpenConnections;
  services: Services;
  /** The services' shutdown order (wiring.ts), then the connections. */
  stop: () => Promise<void>;
}

export async function startUp(
  config: Config,
  options: {
    /** The process's logger; absent, the services log nothing (the command line prints its own). */
    logger?: Logger;
    /** Where the connections' progress goes (the embedded database starting). */
    say: (message: string) => void;
    /** false: an embedded database must already be running (core/src/infra/connections.ts). */
    startDatabase?: boolean;
  },
): Promise<Started> {
  const connections = await openConnections(config, options.say, options.startDatabase);
  let services: Services;
  try {
    services = await buildServices({
      config,
      db: connections.mongo.db,
      longDb: connections.mongo.longDb,
      redis: connections.redis,
      clock: systemClock,
      ...(options.logger && { logger: options.logger }),
    });
  } catch (error) {
    await connections.close();
    throw error;
  }
  return {
    connections,
    services,
    stop: async () => {
      await services.close();
      await connections.close();
    },
  };
}
