// The sync of a whole record (docs/connecting.md, "Sync"), against the sandbox EHR serving a Synthea patient: every
// type the server lists and the scope covers, per-type counts equal to the sandbox's own, the resources the records
// point at read once, a refused type skipped and recorded while the run goes on, a category the server requires
// given by the registration's searches, an invalid resource counted, an incremental run that reads only what
// changed, and a full run that removes what the server no longer returns.
import { expect } from 'chai';
import { GRANTS } from '../../../../../testkit/apps.js';
import { ShiftedClock } from '../../../../../testkit/clock.js';
import { eventsOf } from '../../../../../testkit/events.js';
import { connectThroughBrowser, startSmartWorld, until, type SmartWorld } from '../../../../../testkit/smart.js';
import { syntheaFiles, syntheaPatient } from '../../../../../sandbox/src/fhir/synthea.js';
import { COMPARTMENT_TYPES } from '../../../../../api/src/features/clinical/record-types.js';

const RECORD = syntheaFiles()[1]!; // Brittany: allergies among her types
const MAX_ATTACHMENT = 1400;
const NOT_FETCHED = 'https://portico.dev/fhir/StructureDefinition/attachment-not-fetched';
/** A second patient, whose record the full-run case changes (the others count Maria's as Synthea wrote it). */
const INES = {
  id: 'ines',
  username: 'ines',
  password: 'sandbox',
  name: 'Ines Synthea',
  birthDate: '1970-01-01',
  observations: 0,
  record: syntheaFiles()[0]!,
};
const MARIA = {
  id: 'maria',
  username: 'maria',
  password: 'sandbox',
  name: 'Maria Synthea',
  birthDate: '1990-01-01',
  observations: 0,
  record: RECORD,
};

describe('syncing a whole record from the sandbox EHR (Synthea)', function () {
  this.timeout(120_000);
  let world: SmartWorld;
  const clock = new ShiftedClock();
  /** The sandbox's own count per compartment type for the patient. */
  const expected = new Map<string, number>();

  before(async () => {
    world = await startSmartWorld({
      clock,
      patients: [MARIA, INES],
      grants: { ...GRANTS, resourceTypes: ['*'] },
      // Small enough that the longer notes are left unfetched (and say so), large enough for the others.
      env: { PORTICO_ATTACHMENT_MAX_BYTES: String(MAX_ATTACHMENT) },
      // As Epic needs: Observation searched by category.
      searches: {
        Observation: [
          'category=laboratory',
          'category=vital-signs,survey,social-history,exam,imaging,procedure,therapy,activity',
        ],
      },
    });
    for (const resource of syntheaPatient(RECORD))
      if ((COMPARTMENT_TYPES as readonly string[]).includes(resource.resourceType))
        expected.set(resource.resourceType, (expected.get(resource.resourceType) ?? 0) + 1);
  });
  after(() => world?.close());

  const appUser = (id: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });
  const finished = async (appUserId: string, since: string | null) =>
    (
      await until(
        'a sync ending IDLE',
        () => appUser(appUserId),
        (res) => {
          const sync = res.body.connections[0]?.sync;
          return sync?.status === 'IDLE' && sync.lastSyncedAt !== null && sync.lastSyncedAt !== since;
        },
        60_000,
      )
    ).body.connections[0];
  const fhir = (connectionId: string, path: string) =>
    world.api.request('GET', `/api/sdk/v1/fhir/connections/${connectionId}/${path}`, { key: world.app.ak });

  it('syncs every type the server lists: per-type counts equal the sandbox’s own, references read once', async () => {
    world.ehr.switches.categoryRequired = ['Observation'];
    world.ehr.switches.refuseTypes = { Immunization: 403 };
    try {
      const { back } = await connectThroughBrowser(world, 'public-v2', 'whole-1', { username: 'maria' });
      const connectionId = back.searchParams.get('connectionId')!;
      const connection = await finished('whole-1', null);
      expect(connection.scope).to.include('patient/Condition.rs');
      const types = connection.sync.types as Record<string, { count: number; status: string; httpStatus?: number }>;
      for (const [type, count] of expected) {
        if (type === 'Immunization') continue;
        expect([type, types[type]?.count, types[type]?.status]).to.deep.equal([type, count, 'SYNCED']);
        const searched = await fhir(connectionId, `${type}?_summary=count`);
        expect([type, searched.body.total]).to.deep.equal([type, count]);
      }
      // The refused type: skipped and recorded, the run going on.
      expect(types.Immunization).to.include({ status: 'SKIPPED', httpStatus: 403, count: 0 });
      expect(connection.sync.lastError).to.equal(null);
      // What the records point at: practitioners, organizations, locations and medications, each read once.
      for (const type of ['Practitioner', 'Organization', 'Location', 'Medication']) {
        const read = await fhir(connectionId, `${type}?_summary=count`);
        expect([type, read.body.total > 0]).to.deep.equal([type, true]);
      }
      const events = (await eventsOf(world.api.mongo.db, world.tenant.accountId)).filter(
        (e) => e.type === 'connection.synced' && (e.data as { connectionId: string }).connectionId === connectionId,
      );
      const counts = (events[0]!.data as { counts: Record<string, { added: number }> }).counts;
      expect(counts.Condition!.added).to.equal(expected.get('Condition'));
    } finally {
      world.ehr.switches.categoryRequired = [];
      world.ehr.switches.refuseTypes = {};
    }
  });

  it('fetches attachments on the server’s origin into Binary, byte for byte, and marks those too large', async () => {
    const { back } = await connectThroughBrowser(world, 'public-v2', 'whole-3', { username: 'maria' });
    const connectionId = back.searchParams.get('connectionId')!;
    await finished('whole-3', null);
    const notes = syntheaPatient(RECORD).filter((r) => r.resourceType === 'DocumentReference');
    let fetched = 0;
    let large = 0;
    for (const note of notes) {
      const source = (note.content as { attachment: { data: string; contentType: string } }[])[0]!.attachment;
      const bytes = Buffer.from(source.data, 'base64');
      const stored = (await fhir(connectionId, `DocumentReference/${note.id}`)).body as {
        content: { attachment: { url: string; extension?: { url: string; valueString: string }[] } }[];
      };
      const attachment = stored.content[0]!.attachment;
      if (bytes.length > MAX_ATTACHMENT) {
        expect(attachment.extension).to.deep.include({ url: NOT_FETCHED, valueString: 'too_large' });
        large++;
        continue;
      }
      expect(attachment.url).to.match(/^Binary\//);
      const res = await fetch(`${world.api.url}/api/sdk/v1/fhir/connections/${connectionId}/${attachment.url}`, {
        headers: { authorization: `Bearer ${world.app.ak}` },
      });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.include(source.contentType.split(';')[0]!);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).to.equal(true);
      fetched++;
    }
    expect(fetched).to.be.greaterThan(0);
    expect(large).to.be.greaterThan(0);
    const missing = await fetch(`${world.api.url}/api/sdk/v1/fhir/connections/${connectionId}/Binary/not-there`, {
      headers: { authorization: `Bearer ${world.app.ak}` },
    });
    expect(missing.status).to.equal(404);

    // An attachment is served only while the app may see a record that names it: without DocumentReference and
    // DiagnosticReport among its types, the same Binary is a 404.
    const stored = (await fhir(connectionId, `DocumentReference?_count=100`)).body as {
      entry: { resource: { content: { attachment: { url: string } }[] } }[];
    };
    const binary = stored.entry
      .map((e) => e.resource.content[0]!.attachment.url)
      .find((url) => url.startsWith('Binary/'))!;
    const grants = (narrow: string[]) =>
      world.api.admin('PATCH', `/apps/${world.app.appId}`, { grants: { ...GRANTS, resourceTypes: narrow } });
    expect((await grants(['Condition'])).status).to.equal(200);
    try {
      expect((await fhir(connectionId, binary)).status).to.equal(404);
    } finally {
      expect((await grants(['*'])).status).to.equal(200);
    }
    expect((await fhir(connectionId, binary)).status).to.equal(200);
  });

  it('reads only what changed on the next run, and counts an invalid resource without failing', async () => {
    const { back } = await connectThroughBrowser(world, 'public-v2', 'whole-2', { username: 'maria' });
    const connectionId = back.searchParams.get('connectionId')!;
    const first = await finished('whole-2', null);
    const condition = syntheaPatient(RECORD).find((r) => r.resourceType === 'Condition')!;
    const procedure = syntheaPatient(RECORD).find((r) => r.resourceType === 'Procedure')!;
    world.ehr.touchRecord('public-v2', 'Condition', condition.id);
    world.ehr.touchRecord('public-v2', 'Procedure', procedure.id);
    world.ehr.switches.invalidResources = [`Procedure/${procedure.id}`];
    try {
      clock.advance(61_000);
      const asked = await world.api.request('POST', `/api/platform/v1/connections/${connectionId}/sync`, {
        key: world.tenant.key,
      });
      expect(asked.status, asked.text).to.equal(202);
      const second = await finished('whole-2', first.sync.lastSyncedAt);
      const types = second.sync.types as Record<string, { count: number; invalid: number }>;
      expect(types.Condition!.count).to.equal(expected.get('Condition'));
      expect(types.Procedure!.invalid).to.equal(1);
      const events = (await eventsOf(world.api.mongo.db, world.tenant.accountId)).filter(
        (e) => e.type === 'connection.synced' && (e.data as { connectionId: string }).connectionId === connectionId,
      );
      const counts = (events.at(-1)!.data as { counts: Record<string, { added: number; updated: number }> }).counts;
      // Only the changed Condition came again (and the patient, read each run); nothing else.
      expect(counts.Condition).to.deep.equal({ added: 0, updated: 1 });
      expect(counts.Encounter).to.deep.equal({ added: 0, updated: 0 });
    } finally {
      world.ehr.switches.invalidResources = [];
    }
  });

  it('a full run removes what the server no longer returns, except of a type not read whole', async () => {
    const { back } = await connectThroughBrowser(world, 'public-v2', 'whole-4', { username: 'ines' });
    const connectionId = back.searchParams.get('connectionId')!;
    const first = await finished('whole-4', null);
    const record = syntheaPatient(INES.record);
    const count = (type: string) => record.filter((r) => r.resourceType === type).length;
    const [gone, kept] = record.filter((r) => r.resourceType === 'Condition');
    const [procedure, invalid] = record.filter((r) => r.resourceType === 'Procedure');
    const observation = record.find((r) => r.resourceType === 'Observation')!;
    world.ehr.removeRecord('public-v2', 'Condition', gone!.id);
    world.ehr.removeRecord('public-v2', 'Procedure', procedure!.id);
    world.ehr.removeRecord('public-v2', 'Observation', observation.id);
    world.ehr.switches.invalidResources = [`Procedure/${invalid!.id}`];
    const sync = (body?: unknown) =>
      world.api.request('POST', `/api/platform/v1/connections/${connectionId}/sync`, {
        key: world.tenant.key,
        ...(body !== undefined && { body }),
      });
    try {
      // An incremental run removes nothing (it reads only what changed).
      clock.advance(61_000);
      expect((await sync()).status).to.equal(202);
      const second = await finished('whole-4', first.sync.lastSyncedAt);
      expect((await fhir(connectionId, `Condition/${gone!.id}`)).status).to.equal(200);
      expect((await sync({ full: 'yes' })).status).to.equal(400);

      clock.advance(61_000);
      const asked = await sync({ full: true });
      expect(asked.status, asked.text).to.equal(202);
      const third = await finished('whole-4', second.sync.lastSyncedAt);
      const types = third.sync.types as Record<string, { count: number; invalid: number }>;
      expect(types.Condition!.count).to.equal(count('Condition') - 1);
      expect(types.Procedure!.count).to.equal(count('Procedure'));
      expect((await fhir(connectionId, `Condition/${gone!.id}`)).status).to.equal(404);
      expect((await fhir(connectionId, `Condition/${kept!.id}`)).status).to.equal(200);
      const conditions = await fhir(connectionId, `Condition?_summary=count`);
      expect(conditions.body.total).to.equal(count('Condition') - 1);
      // Its pass met an invalid Procedure, which may stand for a stored one: no Procedure is removed. Observation is
      // searched by the registration's categories, which may leave some out: none is removed either.
      expect((await fhir(connectionId, `Procedure/${procedure!.id}`)).status).to.equal(200);
      expect((await fhir(connectionId, `Observation/${observation.id}`)).status).to.equal(200);
      const everything = await fhir(connectionId, `Patient/ines/$everything?_type=Condition&_count=100`);
      const ids = (everything.body.entry as { resource: { id: string } }[]).map((e) => e.resource.id);
      expect(ids).to.include(kept!.id).and.not.include(gone!.id);
      const events = (await eventsOf(world.api.mongo.db, world.tenant.accountId)).filter(
        (e) => e.type === 'connection.synced' && (e.data as { connectionId: string }).connectionId === connectionId,
      );
      const data = events.at(-1)!.data as { removed: number; counts: Record<string, { removed: number }> };
      expect(data.removed).to.equal(1);
      expect(data.counts.Condition!.removed).to.equal(1);
      expect(data.counts.Procedure!.removed).to.equal(0);
      expect(data.counts.Observation!.removed).to.equal(0);
    } finally {
      world.ehr.switches.invalidResources = [];
    }
  });
});
