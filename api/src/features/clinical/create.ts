// Clinical records, built (docs/architecture.md, "One shape for a feature"): the record store, ingest (the platform
// surface's, and what the sync stores through) and the gateway of the SDK surface with its per-connection indexes.
import { CursorCodec } from '../../shared/http/cursor.js';
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import type { AppUserStore } from '../app-users/index.js';
import type { AppStore } from '../apps/index.js';
import { ConnectionIndexes } from './gateway/connection-indexes.js';
import { GatewayService } from './gateway/service.js';
import type { ReadLog } from './gateway/read-log.js';
import { RecordSearch } from './gateway/record-search.js';
import { IngestService } from './ingest/ingest-service.js';
import { RecordRepository } from './records/store.js';
import { openObjectStorage } from '#core/object-storage/index.js';
import { AttachmentStore } from './attachments/store.js';

export async function createClinical(
  { config, db, longDb, locks, clock, logger, generations }: Infrastructure,
  { users, apps, readLog }: { users: AppUserStore; apps: AppStore; readLog: ReadLog },
) {
  const indexBytes = config.gatewayIndexMb * 1024 * 1024;
  // The gateway's per-connection index is built from a whole connection: a long read.
  const observations = new RecordRepository(
    db,
    locks,
    longDb,
    clock,
    logger,
    // A checkpoint larger than the gateway would index for one connection is not kept (checkpoints.ts).
    indexBytes / 4,
  );
  await observations.init(longDb);
  const indexes = new ConnectionIndexes(observations, indexBytes, undefined, logger);
  const attachments = new AttachmentStore(openObjectStorage(config.attachments.storage));
  const cursors = new CursorCodec(config.cursorSecret);
  const gateway = new GatewayService({
    users,
    apps,
    observations,
    generations,
    indexes,
    cursors,
    clock,
    logger,
    readLog,
  });
  return {
    observations,
    ingest: new IngestService({ users, observations, generations, clock }),
    gateway,
    attachments,
    recordSearch: new RecordSearch({ gateway, records: observations, indexes, cursors, clock, attachments }),
  };
}
