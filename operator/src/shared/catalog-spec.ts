// The BrandCatalog resource's spec (docs/operator.md), written once: the same schema validates files given to
// the command line and, later, generates the CRD's openAPIV3Schema.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { Type, type Static } from '@sinclair/typebox';
import { parse as parseYaml } from 'yaml';
import { LOGO_SIZES, PLATFORM_TYPES } from '#core/catalog/model.js';
import { parseDuration as parseDurationText } from '#core/duration.js';
import { checkDocument, describeProblems } from '#core/schema.js';

/** The resource's API group, version and plural name. */
export const GROUP = 'catalog.portico.dev';
export const VERSION = 'v1alpha1';
export const PLURAL = 'brandcatalogs';
export const CRD_NAME = `brandcatalogs.${GROUP}`;

/** The formats a source may be in (each parsed by operator/src/pipeline/sources/). */
export const SOURCE_FORMATS = ['smart-brands-bundle', 'fhir-endpoint-bundle', 'lantern-endpoints', 'csv'] as const;
export type SourceFormat = (typeof SOURCE_FORMATS)[number];

/** count/period, both bounded so the rate is positive and finite: 1/9999m to 9999/s. */
const RATE_PATTERN = '^([1-9][0-9]{0,3})/([1-9][0-9]{0,3})?(s|m)$';

const KubernetesName = Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' });

export const SourceSpec = Type.Object(
  {
    name: KubernetesName,
    format: Type.Union(SOURCE_FORMATS.map((f) => Type.Literal(f))),
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description: 'https URL (the command line also takes file: URLs, relative to the file).',
      }),
    ),
    configMapRef: Type.Optional(
      Type.Object(
        { name: KubernetesName, key: Type.String({ minLength: 1, maxLength: 253 }) },
        { additionalProperties: false },
      ),
    ),
    inline: Type.Optional(Type.String({ minLength: 1, description: 'The source document itself.' })),
    platformType: Type.Union(
      PLATFORM_TYPES.map((p) => Type.Literal(p)),
      { default: 'OTHER', description: 'For rows that carry no platform type.' },
    ),
    priority: Type.Integer({
      minimum: 0,
      maximum: 1000,
      default: 100,
      description: 'Lower wins when duplicates are merged.',
    }),
  },
  { additionalProperties: false },
);
export type SourceSpec = Static<typeof SourceSpec>;

const DURATION = '^([0-9]+(s|m|h))+$';

/**
 * Live checks of each brand's FHIR endpoint (operator/src/health/). Absent means no checks: a catalog makes
 * requests to thousands of hosts only when its maintainer asks for it. Present (even `{}`), the checks run with
 * these defaults; `enabled: false` pauses them and keeps the settings.
 */
export const HealthChecksSpec = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description: 'false pauses the checks (the last published outcomes stay); without healthChecks there are none.',
    }),
    interval: Type.String({
      pattern: DURATION,
      default: '6h',
      description: "How often each brand's endpoint is checked (5m to 168h); the checks are spread evenly over it.",
    }),
    concurrency: Type.Integer({
      minimum: 1,
      maximum: 256,
      default: 32,
      description: 'Requests in flight at once, over all hosts.',
    }),
    perHostRate: Type.String({
      pattern: RATE_PATTERN,
      maxLength: 16,
      default: '2/s',
      description:
        'Requests per second (or other period) to one host, as count/period: 2/s, 30/m, 1/5s. Many brands share a host.',
    }),
    perHostConcurrency: Type.Integer({
      minimum: 1,
      maximum: 16,
      default: 2,
      description: 'Requests in flight at once to one host.',
    }),
  },
  {
    additionalProperties: false,
    description:
      "Live checks of each brand's FHIR endpoint (its metadata and SMART configuration), published to the API beside the snapshot. Absent: no checks; {} checks with the defaults.",
  },
);
export type HealthChecksSpec = Static<typeof HealthChecksSpec>;

export const BrandCatalogSpec = Type.Object(
  {
    sources: Type.Array(SourceSpec, { minItems: 1, maxItems: 50 }),
    logos: Type.Object(
      {
        sizes: Type.Array(Type.Union(LOGO_SIZES.map((s) => Type.Literal(s))), {
          default: [...LOGO_SIZES],
          uniqueItems: true,
        }),
        faviconFallback: Type.Boolean({ default: true }),
      },
      { additionalProperties: false, default: {} },
    ),
    refreshInterval: Type.String({ pattern: DURATION, default: '24h' }),
    suspend: Type.Boolean({ default: false }),
    rollout: Type.Object(
      {
        retainSnapshots: Type.Integer({ minimum: 1, maximum: 100, default: 5 }),
        minBrandRatioPercent: Type.Integer({ minimum: 0, maximum: 100, default: 50 }),
      },
      { additionalProperties: false, default: {} },
    ),
    healthChecks: Type.Optional(HealthChecksSpec),
  },
  { additionalProperties: false },
);
export type BrandCatalogSpec = Static<typeof BrandCatalogSpec>;

export const BrandCatalogDocument = Type.Object({
  apiVersion: Type.Literal('catalog.portico.dev/v1alpha1'),
  kind: Type.Literal('BrandCatalog'),
  metadata: Type.Object({ name: KubernetesName, namespace: Type.Optional(KubernetesName) }),
  spec: BrandCatalogSpec,
});

/** A refreshInterval ("24h", "1h30m", "45s", checked by the schema) in milliseconds. */
export function parseDuration(text: string): number {
  return parseDurationText(text) ?? 0;
}

/** The bounds the CRD enforces with CEL (operator/src/crd/generate.ts), applied to files the same way. */
export const MIN_REFRESH_MS = 60_000;
export const MAX_REFRESH_MS = 720 * 3_600_000;
export const MIN_HEALTH_INTERVAL_MS = 5 * 60_000;
export const MAX_HEALTH_INTERVAL_MS = 168 * 3_600_000;

/** A request rate: at most `count` per `periodMs`. */
export interface Rate {
  count: number;
  periodMs: number;
}

/** A perHostRate ("2/s", "30/m", "1/5s", checked by the schema's pattern). */
export function parseRate(text: string): Rate {
  const match = new RegExp(RATE_PATTERN).exec(text);
  if (!match) throw new Error(`"${text}" is not a rate such as 2/s, 30/m or 1/5s`);
  return { count: Number(match[1]), periodMs: Number(match[2] || 1) * (match[3] === 'm' ? 60_000 : 1000) };
}

export interface CatalogFile {
  namespace: string;
  name: string;
  spec: BrandCatalogSpec;
  /** Directory of the file, against which relative file: URLs resolve. */
  baseDir: string;
}

/** Reads and validates a BrandCatalog YAML (or JSON) file. */
export async function loadCatalogFile(file: string): Promise<CatalogFile> {
  const checked = checkDocument(BrandCatalogDocument, parseYaml(await readFile(file, 'utf8')));
  if (!checked.ok) throw new Error(`${path.basename(file)} is not a valid BrandCatalog: ${describeProblems(checked)}`);
  const document = checked.value;
  const names = new Set<string>();
  for (const source of document.spec.sources) {
    const given = [source.url, source.configMapRef, source.inline].filter((v) => v !== undefined).length;
    if (given !== 1)
      throw new Error(`source "${source.name}": exactly one of url, configMapRef and inline is required`);
    if (names.has(source.name)) throw new Error(`source names must be unique: "${source.name}" is given twice`);
    names.add(source.name);
  }
  const interval = parseDuration(document.spec.refreshInterval);
  if (interval < MIN_REFRESH_MS || interval > MAX_REFRESH_MS)
    throw new Error('refreshInterval must be between 1m and 720h (30 days)');
  const health = document.spec.healthChecks;
  const healthInterval = health && parseDuration(health.interval);
  if (
    healthInterval !== undefined &&
    (healthInterval < MIN_HEALTH_INTERVAL_MS || healthInterval > MAX_HEALTH_INTERVAL_MS)
  )
    throw new Error('healthChecks.interval must be between 5m and 168h (7 days)');
  return {
    namespace: document.metadata.namespace ?? 'default',
    name: document.metadata.name,
    spec: document.spec,
    baseDir: path.dirname(path.resolve(file)),
  };
}

const gunzipAsync = promisify(gunzip);

/**
 * The text of a source, for sources the command line can read without a cluster (file: URLs, relative to the
 * catalog file, gunzipped when they end in `.gz`; inline text).
 */
export async function readLocalSource(source: SourceSpec, baseDir: string): Promise<string | undefined> {
  if (source.inline !== undefined) return source.inline;
  if (source.url?.startsWith('file:')) {
    const target = path.resolve(baseDir, decodeURIComponent(source.url.replace(/^file:(\/\/)?/, '')));
    const bytes = await readFile(target);
    return (target.endsWith('.gz') ? await gunzipAsync(bytes) : bytes).toString('utf8');
  }
  return undefined;
}
