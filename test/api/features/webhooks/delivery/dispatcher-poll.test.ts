// The dispatcher's backstop pass scans whole collections (on the embedded database, every document of each):
// on a slow database a pass can outlast the poll interval, and passes that overlapped added their scans to
// what slowed it. Passes now take turns, and a tick while one runs is skipped.
import { expect } from 'chai';
import type { OutboxRecovery } from '../../../../../api/src/features/events/outbox-recovery.js';
import { TestApi } from '../../../../../testkit/api.js';

describe('events: the dispatcher backstop pass', () => {
  let api: TestApi;

  before(async () => {
    api = await TestApi.start({ dispatch: true, env: { PORTICO_WEBHOOK_POLL_MS: '600000' } });
  });
  after(() => api.close());

  it('never runs two passes at once: a pass asked for while one runs waits for it', async () => {
    await api.services.dispatcher.poll(); // after the one start() began
    const recovery = (api.services.dispatcher as unknown as { deps: { recovery: OutboxRecovery } }).deps.recovery;
    const original = recovery.recoverStaged.bind(recovery);
    let entered = 0;
    let running = 0;
    let most = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    recovery.recoverStaged = async (...args) => {
      entered++;
      most = Math.max(most, ++running);
      try {
        if (entered === 1) await held;
        return await original(...args);
      } finally {
        running--;
      }
    };
    try {
      const first = api.services.dispatcher.poll();
      const second = api.services.dispatcher.poll();
      const third = api.services.dispatcher.poll();
      expect(entered, 'passes begun while the first is held').to.equal(1);
      release();
      await Promise.all([first, second, third]);
      expect(most, 'passes at once').to.equal(1);
      expect(entered, 'passes made in all').to.equal(3);
    } finally {
      recovery.recoverStaged = original;
    }
  });
});
