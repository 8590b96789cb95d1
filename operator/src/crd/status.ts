// The BrandCatalog resource's status (docs/operator.md), written once like the spec: the controller's type for
// what it writes, and the CRD's status schema (generate.ts). Every field is optional because a new resource
// has no status until the controller first reconciles it.
import { Type, type Static } from '@sinclair/typebox';

export const CONDITION_TYPES = ['Ready', 'Reconciling', 'Stalled'] as const;
export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;

const count = (description: string) => Type.Integer({ minimum: 0, description });
const timestamp = (description: string) => Type.String({ format: 'date-time', maxLength: 64, description });

/** metav1.Condition with the types this controller sets; `reason` is a CamelCase word for programs. */
export const Condition = Type.Object({
  type: Type.Union(CONDITION_TYPES.map((t) => Type.Literal(t))),
  status: Type.Union(CONDITION_STATUSES.map((s) => Type.Literal(s))),
  reason: Type.String({
    minLength: 1,
    maxLength: 128,
    pattern: '^[A-Z][A-Za-z0-9]*$',
    description: 'CamelCase, e.g. BrandCountDrop.',
  }),
  message: Type.String({ maxLength: 32768, description: 'For people: what happened and what to do.' }),
  lastTransitionTime: timestamp('When status last changed (not when the condition was last written).'),
  observedGeneration: Type.Optional(count('The metadata.generation this condition was set from.')),
});
export type Condition = Static<typeof Condition>;
export type ConditionType = (typeof CONDITION_TYPES)[number];

/** A source that could not be read has an error and no counts. */
export const SourceStatus = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 63, description: 'spec.sources[].name.' }),
  rowsRead: Type.Optional(count('Rows (brands or endpoints) the source document held.')),
  rejected: Type.Optional(count('Rows skipped: no name or no usable absolute http(s) FHIR base URL.')),
  kept: Type.Optional(
    count('Rows this source contributed to the merge (rows read minus rejected, duplicates included).'),
  ),
  error: Type.Optional(
    Type.String({ maxLength: 4096, description: 'Why the source could not be fetched or parsed, when it could not.' }),
  ),
});
export type SourceStatus = Static<typeof SourceStatus>;

export const LogoStatus = Type.Object({
  rendered: count('Brands whose own logo was rendered.'),
  fallback: count("Brands given a fallback (the portal's favicon) instead."),
  failed: count('Brands left without a logo.'),
});
export type LogoStatus = Static<typeof LogoStatus>;

export const SnapshotStatus = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 128 }),
    brandCount: count('Brands in the snapshot.'),
    publishedAt: timestamp('When the snapshot was written.'),
  },
  { description: 'The active snapshot, the one the API serves.' },
);
export type SnapshotStatus = Static<typeof SnapshotStatus>;

export const BrandCatalogStatus = Type.Object({
  observedGeneration: Type.Optional(count('The metadata.generation the status describes.')),
  conditions: Type.Optional(Type.Array(Condition, { maxItems: CONDITION_TYPES.length })),
  brandCount: Type.Optional(count('Brands in the active snapshot.')),
  duplicatesMerged: Type.Optional(count('Rows merged into another brand by FHIR system identity in the last build.')),
  sources: Type.Optional(Type.Array(SourceStatus, { maxItems: 50, description: 'Per source, from the last build.' })),
  logos: Type.Optional(LogoStatus),
  currentSnapshot: Type.Optional(SnapshotStatus),
  lastSyncTime: Type.Optional(timestamp('When the sources were last read.')),
  nextSyncTime: Type.Optional(
    timestamp('When they will be read again (lastSyncTime + spec.refreshInterval, sooner after a failure).'),
  ),
  // Endpoint health (spec.healthChecks), written at most once a minute while checks run; absent without them.
  endpointsUp: Type.Optional(
    count('Brands of the active snapshot whose FHIR endpoint answered both its metadata and its SMART configuration.'),
  ),
  endpointsDegraded: Type.Optional(count('Brands whose endpoint answered one of the two documents only.')),
  endpointsDown: Type.Optional(count('Brands whose endpoint answered neither usefully (still listed in the catalog).')),
  endpointsUnknown: Type.Optional(count('Brands not checked yet.')),
  lastHealthSweepAt: Type.Optional(timestamp('When the last complete pass over every brand of the snapshot ended.')),
});
export type BrandCatalogStatus = Static<typeof BrandCatalogStatus>;
