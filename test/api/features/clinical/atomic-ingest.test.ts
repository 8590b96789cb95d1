// A bundle is applied whole or not at all (api/src/features/clinical/records/bundle-heads.ts, store.ts): readers see none
// of it until its commit and all of it after, also while its replacements are applied in place; a bundle whose writer
// died part-way is never seen, and a retry with the same Idempotency-Key writes it whole; a writer whose lease was
// taken over commits nothing. The writer's death is made exact here: its commit waits on a gate the test holds (a
// process killed at any step before it leaves the same state: its record and its new observations written, or some of
// them, and no commit), and its lease and the request's claim run out on the injected clock. The gateway is read both
// ways: from its per-replica index and from the database.
import { expect } from 'chai';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { appOf, connectionOf, GRANTS, type AppKeys } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { manyObservations, observationBundle } from '../../../../testkit/observations.js';
import { until } from '../../../../testkit/until.js';
import { APPLIER_LEASE_MS, WRITER_LEASE_MS } from '../../../../api/src/features/clinical/records/bundle-heads.js';
import { KEPT_MS, type WriterLease } from '../../../../api/src/features/clinical/records/head-document.js';
import { BUNDLES } from '../../../../api/src/features/clinical/records/bundle-records.js';
import { LEASE_MS } from '../../../../api/src/shared/http/idempotency.js';

const PLATFORM = '/api/platform/v1';
const COUNT = 300;

for (const [where, indexMb] of [
  ['its index', '128'],
  ['the database', '0'],
] as const) {
  describe(`platform: atomic ingest, the gateway reading ${where}`, function () {
    this.timeout(180_000);
    const clock = new ManualClock(new Date('2026-11-26T09:00:00.000Z'));
    let api: TestApi;
    let tenant: Tenant;
    let app: AppKeys;
    let brandId: string;

    before(async () => {
      api = await TestApi.start({ clock, env: { PORTICO_GATEWAY_INDEX_MB: indexMb } });
      await publishTo(api, realSources());
      brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
      tenant = await api.tenant();
      // Grants that show every observation manyObservations() makes (their labels included).
      app = await appOf(api, tenant, { ...GRANTS, confidentiality: ['N', 'R'], sensitivity: ['HIV', 'PSY'] });
    });
    after(() => api.close());

    const resources = manyObservations(COUNT);
    const round = (name: string) =>
      observationBundle(resources.map((resource) => ({ ...resource, note: [{ text: name }] })));
    const ingest = (connectionId: string, body: unknown, headers: Record<string, string> = {}) =>
      api.request('POST', `${PLATFORM}/connections/${connectionId}/observations`, { key: tenant.key, body, headers });
    /**
     * What one gateway search shows: how many match, and the rounds the page's observations come from. With
     * `busyIsAnAnswer`, null for the retryable 503 a search of the database gives when bundles keep replacing what
     * it reads (docs/api.md, "Clinical records and the observation gateway"): on a slow machine back-to-back
     * re-ingests can outpace a read's attempts, and that answer is honest; a mixed page never is.
     */
    const seen = async (connectionId: string, busyIsAnAnswer = false) => {
      const res = await api.request('POST', '/api/sdk/v1/observations/_search', {
        key: app.ak,
        body: { connectionId, _count: 100 },
      });
      if (busyIsAnAnswer && res.status === 503 && res.body.code === 'SERVICE_UNAVAILABLE' && res.body.retryable) {
        return null;
      }
      expect(res.status, res.text).to.equal(200);
      const rounds = new Set<string>(
        res.body.entry.map(
          (entry: { resource: { note?: { text: string }[] } }) => entry.resource.note?.[0]?.text ?? 'none',
        ),
      );
      return { total: res.body.total as number, rounds: [...rounds].sort() };
    };
    /** Holds the next commit at a gate: the writer has written its versions and waits, as one that died would. */
    const holdNextCommit = () => {
      const heads = api.services.observations.heads;
      const commit = heads.commit.bind(heads);
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      let reached!: (lease: WriterLease) => void;
      const held = new Promise<WriterLease>((resolve) => (reached = resolve));
      heads.commit = async (lease, replaces, at) => {
        heads.commit = commit;
        reached(lease);
        await gate;
        return commit(lease, replaces, at);
      };
      return { held, open };
    };

    it('shows nothing of a bundle until its commit, then all of it', async () => {
      const connectionId = await connectionOf(api, tenant, app, `atomic-first-${indexMb}`, brandId);
      const { held, open } = holdNextCommit();
      const first = ingest(connectionId, round('one'));
      await held;
      for (let i = 0; i < 3; i++) expect(await seen(connectionId)).to.deep.equal({ total: 0, rounds: [] });
      open();
      expect((await first).body).to.deep.equal({ ingested: COUNT, updated: 0 });
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['one'] });
    });

    it('keeps the last commit in view while a re-ingest is written, then swaps all of it at once', async () => {
      const connectionId = await connectionOf(api, tenant, app, `atomic-again-${indexMb}`, brandId);
      expect((await ingest(connectionId, round('one'))).body).to.deep.equal({ ingested: COUNT, updated: 0 });
      const { held, open } = holdNextCommit();
      const second = ingest(connectionId, round('two'));
      await held;
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['one'] });
      open();
      await second;
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['two'] });
      // Polling while bundles go in unheld: every page is of one round, and the count never moves (until one page
      // is seen, also after the last bundle).
      let polling = true;
      const polls: { total: number; rounds: string[] }[] = [];
      const poller = (async () => {
        while (polling || polls.length === 0) {
          const poll = await seen(connectionId, true);
          if (poll) polls.push(poll);
        }
      })();
      for (const name of ['three', 'four', 'five'])
        expect((await ingest(connectionId, round(name))).body).to.deep.equal({ ingested: 0, updated: COUNT });
      polling = false;
      await poller;
      expect(polls.length).to.be.greaterThan(0);
      expect(polls.filter((poll) => poll.total !== COUNT || poll.rounds.length !== 1)).to.deep.equal([]);
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['five'] });
    });

    it('never shows a bundle whose writer died, and a retry with its Idempotency-Key writes it whole', async () => {
      const connectionId = await connectionOf(api, tenant, app, `atomic-died-${indexMb}`, brandId);
      expect((await ingest(connectionId, round('one'))).status).to.equal(200);
      const { held, open } = holdNextCommit();
      const headers = { 'Idempotency-Key': `died-${indexMb}` };
      const two = round('two'); // a retry sends the same body
      const dying = ingest(connectionId, two, headers);
      const lease = await held;
      // The dying bundle's record is written; none of it is seen.
      const records = api.mongo.db.collection(BUNDLES);
      expect(await records.countDocuments({ _id: `${connectionId}/${lease.gen}` } as object)).to.equal(1);
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['one'] });
      // Its claim and its lease run out (the writer is alive here, so its claim may be renewed once more: the
      // clock moves on until the retry finds it run out); the client's retry finds nothing committed, and writes
      // the bundle whole.
      const retry = await until('the retry to take the claim over', async () => {
        clock.advance(Math.max(LEASE_MS, WRITER_LEASE_MS) + 1_000);
        const res = await ingest(connectionId, two, headers);
        return res.body.code === 'IDEMPOTENCY_KEY_IN_USE' ? undefined : res;
      });
      expect(retry.status, retry.text).to.equal(200);
      expect(retry.body).to.deep.equal({ ingested: 0, updated: COUNT });
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['two'] });
      // The dead writer wakes: its lease is gone, so it commits nothing, and nothing of it is seen.
      open();
      expect((await dying).status).to.not.equal(200);
      expect(await api.services.observations.heads.commit(lease, true, clock.now())).to.equal(false);
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['two'] });
      expect((await api.services.observations.heads.head(connectionId))!.abandoned.map((a) => a.gen)).to.include(
        lease.gen,
      );

      // Long after, what nobody needs any more is deleted: the dead generation's record, and the older bundles'.
      await api.services.observations.settled();
      clock.advance(KEPT_MS + 1_000);
      expect((await ingest(connectionId, round('three'))).status).to.equal(200);
      await api.services.observations.settled();
      expect(await records.countDocuments({ connectionId })).to.equal(1); // round three's, kept a while for readers
      expect(await api.mongo.db.collection('observations').countDocuments({ connectionId })).to.equal(COUNT);
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['three'] });
      // The dead generation stays listed (its leftovers cleaned) for as long as a retry may ask whether it committed.
      const head = (await api.services.observations.heads.head(connectionId))!;
      expect({
        abandoned: head.abandoned.map((a) => ({ gen: a.gen, cleaned: a.cleaned })),
        pending: head.pending,
        kept: head.kept.map((k) => k.gen),
      }).to.deep.equal({
        abandoned: [{ gen: lease.gen, cleaned: true }],
        pending: [],
        kept: [head._version],
      });
    });

    it('never shows the new observations of a bundle whose writer died; the retry writes them as new', async () => {
      const connectionId = await connectionOf(api, tenant, app, `atomic-died-new-${indexMb}`, brandId);
      const { held, open } = holdNextCommit();
      const headers = { 'Idempotency-Key': `died-new-${indexMb}` };
      const one = round('one');
      const dying = ingest(connectionId, one, headers);
      await held;
      // Its observations are inserted, marked with a generation not committed: none is seen.
      expect(await api.mongo.db.collection('observations').countDocuments({ connectionId })).to.equal(COUNT);
      expect(await seen(connectionId)).to.deep.equal({ total: 0, rounds: [] });
      const retry = await until('the retry to take the claim over', async () => {
        clock.advance(Math.max(LEASE_MS, WRITER_LEASE_MS) + 1_000);
        const res = await ingest(connectionId, one, headers);
        return res.body.code === 'IDEMPOTENCY_KEY_IN_USE' ? undefined : res;
      });
      expect(retry.body).to.deep.equal({ ingested: COUNT, updated: 0 });
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['one'] });
      open();
      expect((await dying).status).to.not.equal(200);
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['one'] });
      expect(await api.mongo.db.collection('observations').countDocuments({ connectionId })).to.equal(COUNT);
    });

    it('shows a committed bundle whole while its replacements are applied, and another takes over a stopped applier', async () => {
      const connectionId = await connectionOf(api, tenant, app, `atomic-applying-${indexMb}`, brandId);
      expect((await ingest(connectionId, round('one'))).status).to.equal(200);
      await api.services.observations.settled();
      // The next bundle's applier stops after its first batch, as a server stopped there would.
      const applier = api.services.observations.applier;
      const replace = applier.replace.bind(applier);
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      let reached!: () => void;
      const stopped = new Promise<void>((resolve) => (reached = resolve));
      let batches = 0;
      applier.replace = async (id, gen, batch) => {
        if (++batches === 2) {
          reached();
          await gate;
        }
        return replace(id, gen, batch);
      };
      expect((await ingest(connectionId, round('two'))).body).to.deep.equal({ ingested: 0, updated: COUNT });
      await stopped;
      expect(
        await api.mongo.db.collection('observations').countDocuments({ connectionId, 'resource.note.text': 'two' }),
      ).to.equal(100);
      if (indexMb !== '0') {
        // The index lays the bundle's record over what it reads.
        for (let i = 0; i < 3; i++) expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['two'] });
      } else {
        // A database query cannot: the search waits for the applier, then answers 503 (retry).
        const res = await api.request('POST', '/api/sdk/v1/observations/_search', {
          key: app.ak,
          body: { connectionId, _count: 100 },
        });
        expect(res.status, res.text).to.equal(503);
        expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      }
      // The applier's lease runs out: the next search of the database, or the next read of the whole connection
      // (a gateway index build on any replica, the next bundle), applies the rest.
      clock.advance(APPLIER_LEASE_MS + 1_000);
      if (indexMb !== '0') expect(await api.services.observations.current(connectionId)).to.have.length(COUNT);
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['two'] });
      await until(
        'the bundle to be applied',
        async () => (await api.services.observations.heads.head(connectionId))!.pending.length === 0,
      );
      expect(
        await api.mongo.db.collection('observations').countDocuments({ connectionId, 'resource.note.text': 'two' }),
      ).to.equal(COUNT);
      // The stopped applier wakes: its lease is gone, so it writes at most the batch it was in, and stops.
      open();
      await api.services.observations.settled();
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['two'] });
      applier.replace = replace;
    });

    it('writes a bundle sent while another of its connection is written once that one is committed, each whole', async () => {
      const connectionId = await connectionOf(api, tenant, app, `atomic-together-${indexMb}`, brandId);
      const { held, open } = holdNextCommit();
      const first = ingest(connectionId, round('left'));
      await held;
      const second = ingest(connectionId, round('right'));
      open();
      expect((await first).body).to.deep.equal({ ingested: COUNT, updated: 0 });
      expect((await second).body).to.deep.equal({ ingested: 0, updated: COUNT });
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['right'] });
    });

    it('answers 503, having written nothing, when another bundle holds the connection longer than it waits', async () => {
      const connectionId = await connectionOf(api, tenant, app, `atomic-busy-${indexMb}`, brandId);
      const { held, open } = holdNextCommit();
      const first = ingest(connectionId, round('left'));
      await held;
      const refused = await ingest(connectionId, round('right'));
      expect(refused.status).to.equal(503);
      expect(refused.body).to.include({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      expect(refused.headers.get('retry-after')).to.equal('1');
      open();
      expect((await first).status).to.equal(200);
      expect(await seen(connectionId)).to.deep.equal({ total: COUNT, rounds: ['left'] });
      expect(await api.mongo.db.collection('observations').countDocuments({ connectionId })).to.equal(COUNT);
    });
  });
}
