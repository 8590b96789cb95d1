// Whole synthetic records (Synthea's: test/fixtures/synthea) as a FHIR server holds them, for the patients given one
// (SandboxPatient.record): every resource kept with its id, the patient's own id put in place of Synthea's,
// conditional references to practitioners, organizations and locations resolved against the population's own
// bundles (which are served too), and notes and reports kept as Binary resources that the attachments point at by
// URL, as EHRs serve them. Each resource gets a meta.lastUpdated (the seed time, a minute apart) that a change moves.
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SEEDED_AT, SEED_STEP_MS } from '../data.js';
import type { SandboxPatient } from '../types.js';
import { SYNTHEA_FIXTURES, syntheaPatient, withReferences } from './synthea.js';

export type Resource = Record<string, unknown> & { resourceType: string; id: string };

export interface StoredBinary {
  contentType: string;
  data: Buffer;
}

/** The types a record's resources are searched by patient (the others are read by id). */
const REFERENCED = new Set(['Practitioner', 'PractitionerRole', 'Organization', 'Location', 'Medication']);

interface Record_ {
  /** By type, in (meta.lastUpdated, id) order. */
  byType: Map<string, Resource[]>;
}

export class RecordStore {
  /** By brand, then patient id. */
  private readonly records = new Map<string, Map<string, Record_>>();
  /** Every resource by `Type/id`, per brand (a read finds any, referenced ones included). */
  private readonly byKey = new Map<string, Map<string, Resource>>();
  private readonly binaries = new Map<string, Map<string, StoredBinary>>();
  /**
   * Whose record each patient's resource (`Type/id`, `Binary/id`) is, per brand (patients given the same record file
   * share its ids); shared ones are nobody's.
   */
  private readonly owners = new Map<string, Map<string, Set<string>>>();

  constructor(
    brandKeys: string[],
    patients: SandboxPatient[],
    private readonly folder = SYNTHEA_FIXTURES,
  ) {
    const withRecords = patients.filter((p) => p.record !== undefined);
    for (const brand of brandKeys) {
      this.records.set(brand, new Map());
      this.byKey.set(brand, new Map());
      this.binaries.set(brand, new Map());
      this.owners.set(brand, new Map());
      // Each record with the population it was generated in (the folder its file is in).
      const populations = new Map<string, Resource[]>();
      for (const patient of withRecords) {
        const dir = path.dirname(path.join(this.folder, patient.record!));
        let shared = populations.get(dir);
        if (!shared) {
          populations.set(dir, (shared = this.population(dir)));
          for (const resource of shared) this.keep(brand, resource);
        }
        this.load(brand, patient, shared);
      }
    }
  }

  /** Whether any patient has a whole record (then the server lists every type). */
  get holdsRecords(): boolean {
    return [...this.records.values()].some((byPatient) => byPatient.size > 0);
  }

  hasRecord(brand: string, patientId: string): boolean {
    return this.records.get(brand)?.has(patientId) ?? false;
  }

  /** The patient's resources of `type` (lastUpdated ≥ `since`, when given), in (lastUpdated, id) order. */
  search(brand: string, patientId: string, type: string, since: number | null): Resource[] {
    const all = this.records.get(brand)?.get(patientId)?.byType.get(type) ?? [];
    return since === null ? all : all.filter((r) => Date.parse(lastUpdated(r)) >= since);
  }

  read(brand: string, type: string, id: string): Resource | undefined {
    return this.byKey.get(brand)?.get(`${type}/${id}`);
  }

  /** Whether `key` (`Type/id` or `Binary/id`) is in the patient's record, or shared (a practitioner). */
  readableBy(brand: string, key: string, patientId: string): boolean {
    const owners = this.owners.get(brand)?.get(key);
    return owners === undefined || owners.has(patientId);
  }

  binary(brand: string, id: string): StoredBinary | undefined {
    return this.binaries.get(brand)?.get(id);
  }

  /** A changed resource: its meta.lastUpdated moves to `at` and its versionId up by one. */
  touch(brand: string, type: string, id: string, at: number): void {
    const resource = this.read(brand, type, id);
    if (!resource) throw new Error(`no ${type}/${id} in ${brand}`);
    const meta = resource.meta as { versionId: string; lastUpdated: string };
    meta.versionId = String(Number(meta.versionId) + 1);
    meta.lastUpdated = new Date(at).toISOString();
    for (const byPatient of this.records.get(brand)!.values()) byPatient.byType.get(type)?.sort(order);
  }

  /** A resource the server no longer has (deleted, as an entered-in-error record is): no search or read finds it. */
  remove(brand: string, type: string, id: string): void {
    if (!this.byKey.get(brand)?.delete(`${type}/${id}`)) throw new Error(`no ${type}/${id} in ${brand}`);
    for (const byPatient of this.records.get(brand)!.values()) {
      const list = byPatient.byType.get(type);
      const at = list?.findIndex((r) => r.id === id) ?? -1;
      if (at >= 0) list!.splice(at, 1);
    }
  }

  /** The organizations, locations, practitioners and roles of the population (Synthea's other bundles). */
  private population(dir: string): Resource[] {
    const read = (name: string) =>
      (
        JSON.parse(gunzipSync(readFileSync(path.join(dir, name))).toString('utf8')) as {
          entry: { resource: Resource }[];
        }
      ).entry.map((e) => e.resource);
    const resources = [...read('organizations.json.gz'), ...read('practitioners.json.gz')];
    const resolved = resolveConditional(resources, resources);
    resolved.forEach((resource, i) => stamp(resource, i));
    return resolved;
  }

  private load(brand: string, patient: SandboxPatient, shared: Resource[]): void {
    const resources = syntheaPatient(patient.record!, this.folder);
    const own = resources.find((r) => r.resourceType === 'Patient')!.id;
    // The sandbox's id for the patient in place of Synthea's, everywhere.
    const renamed = JSON.parse(JSON.stringify(resources).replaceAll(own, patient.id)) as Resource[];
    // The name the sign-in page shows, so the record is recognisably the patient who signed in.
    const parts = patient.name.split(' ');
    renamed.find((r) => r.resourceType === 'Patient')!.name = [
      { use: 'official', text: patient.name, family: parts.at(-1), given: parts.slice(0, -1) },
    ];
    const record: Record_ = { byType: new Map() };
    const owners = this.owners.get(brand)!;
    resolveConditional(renamed, shared).forEach((resource, i) => {
      stamp(resource, i);
      const held = (key: string) => owners.set(key, (owners.get(key) ?? new Set()).add(patient.id));
      for (const binary of this.keepAttachments(brand, resource)) held(`Binary/${binary}`);
      this.keep(brand, resource);
      if (REFERENCED.has(resource.resourceType)) return;
      held(`${resource.resourceType}/${resource.id}`);
      const list = record.byType.get(resource.resourceType) ?? [];
      list.push(resource);
      record.byType.set(resource.resourceType, list);
    });
    for (const list of record.byType.values()) list.sort(order);
    this.records.get(brand)!.set(patient.id, record);
  }

  private keep(brand: string, resource: Resource): void {
    this.byKey.get(brand)!.set(`${resource.resourceType}/${resource.id}`, resource);
  }

  /**
   * Inline attachment data becomes a Binary the attachment names by a `Binary/<id>` URL (made absolute when served):
   * their ids.
   */
  private keepAttachments(brand: string, resource: Resource): string[] {
    const kept: string[] = [];
    const attachments: Record<string, unknown>[] =
      resource.resourceType === 'DocumentReference'
        ? ((resource.content as { attachment: Record<string, unknown> }[] | undefined) ?? []).map((c) => c.attachment)
        : resource.resourceType === 'DiagnosticReport'
          ? ((resource.presentedForm as Record<string, unknown>[] | undefined) ?? [])
          : [];
    attachments.forEach((attachment, i) => {
      if (typeof attachment.data !== 'string') return;
      const id = `${resource.id}-${i}`;
      const data = Buffer.from(attachment.data, 'base64');
      this.binaries.get(brand)!.set(id, {
        contentType: typeof attachment.contentType === 'string' ? attachment.contentType : 'application/octet-stream',
        data,
      });
      delete attachment.data;
      attachment.url = `Binary/${id}`;
      attachment.size = data.length;
      kept.push(id);
    });
    return kept;
  }
}

const lastUpdated = (r: Resource) => (r.meta as { lastUpdated: string }).lastUpdated;
const order = (a: Resource, b: Resource) =>
  lastUpdated(a) < lastUpdated(b) ? -1 : lastUpdated(a) > lastUpdated(b) ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

function stamp(resource: Resource, i: number): void {
  resource.meta = {
    ...(resource.meta as object | undefined),
    versionId: '1',
    lastUpdated: new Date(SEEDED_AT + i * SEED_STEP_MS).toISOString(),
  };
}

/**
 * `Practitioner?identifier=system|value` and the like, as a server resolves them on a transaction: to `Type/id` of
 * the one resource of `among` with that identifier (left as it is when there is none).
 */
function resolveConditional(resources: Resource[], among: Resource[]): Resource[] {
  const byIdentifier = new Map<string, string>();
  for (const r of among)
    for (const identifier of (r.identifier as { system?: string; value?: string }[] | undefined) ?? [])
      byIdentifier.set(
        `${r.resourceType}?identifier=${identifier.system}|${identifier.value}`,
        `${r.resourceType}/${r.id}`,
      );
  return resources.map((r) => withReferences(r, byIdentifier));
}
