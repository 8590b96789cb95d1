// `portico dispatch`: the webhook dispatcher alone, without serving HTTP (for a deployment that runs
// delivery apart from the API replicas, which then set PORTICO_WEBHOOK_DISPATCH=false). Stops on SIGTERM
// after the attempts in flight.
import { createLogger } from '#core/infra/logger.js';
import { loadConfig } from '../config.js';
import { startUp } from '../start-up.js';

export async function runDispatcher(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'portico-api');
  const { services, stop: stopServices } = await startUp(config, { logger, say: (m) => logger.info(m) });
  await services.dispatcher.start();
  logger.info({ dispatcher: services.dispatcher.id }, 'webhook dispatcher running');
  const stop = async (signal: string) => {
    logger.info({ signal }, 'stopping the webhook dispatcher');
    await stopServices();
    logger.flush();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}
