// The access log, built (docs/api.md, "The access log"): its store, the writer the gateway records through, and the
// service that reads it back.
import { CursorCodec } from '../../shared/http/cursor.js';
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import type { AppStore } from '../apps/index.js';
import type { ServedBrands } from '../connect-sessions/index.js';
import { AccessLogRetention, AccessLogService } from './service.js';
import { AccessLogRepository } from './store.js';
import { AccessLogWriter } from './writer.js';

export async function createAccessLog(
  { config, db, longDb, locks, clock }: Infrastructure,
  { apps, brands }: { apps: Pick<AppStore, 'get'>; brands: ServedBrands },
) {
  const store = new AccessLogRepository(db, locks);
  await store.init(longDb);
  return {
    writer: new AccessLogWriter(store, clock),
    service: new AccessLogService({
      store,
      apps,
      brands,
      cursors: new CursorCodec(config.cursorSecret),
    }),
    // The sweep scans the whole collection on FerretDB: with the deadline of long operations.
    retention: new AccessLogRetention(new AccessLogRepository(longDb, locks), clock, config.audit.retentionMs),
  };
}
