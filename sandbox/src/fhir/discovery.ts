// What a client reads before it has a token: SMART's .well-known/smart-configuration and the FHIR
// CapabilityStatement with the oauth-uris extension. The smartConfiguration switch breaks the former on purpose;
// endpointHostnames makes both name another host.
import type { Context } from 'koa';
import type { SandboxBrand } from '../types.js';
import { acceptsV2, endpoints, fhirBase, issuer, type World } from '../world.js';
import { OTHER_SCOPES } from '../oauth/scopes.js';

const CAPABILITIES = [
  'launch-standalone',
  'client-public',
  'client-confidential-symmetric',
  'client-confidential-asymmetric',
  'context-standalone-patient',
  'permission-offline',
  'permission-patient',
];

export function smartConfiguration(world: World, brand: SandboxBrand): Record<string, unknown> {
  const v2 = acceptsV2(brand);
  return {
    issuer: issuer(world, brand.key),
    ...endpoints(world, brand.key),
    code_challenge_methods_supported: ['S256'],
    capabilities: [...CAPABILITIES, v2 ? 'permission-v2' : 'permission-v1'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'private_key_jwt'],
    token_endpoint_auth_signing_alg_values_supported: ['ES384', 'RS384'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    response_types_supported: ['code'],
    ...(world.switches.advertiseIss ? { authorization_response_iss_parameter_supported: true } : {}),
    // With whole records, every type served; else the patient and observations (and the wildcard).
    scopes_supported: [
      ...OTHER_SCOPES,
      ...scopedTypes(world).map((type) => `patient/${type}.read`),
      'patient/*.read',
      ...(v2 ? [...scopedTypes(world).map((type) => `patient/${type}.rs`), 'patient/*.rs'] : []),
    ],
  };
}

export async function serveSmartConfiguration(world: World, brand: SandboxBrand, ctx: Context): Promise<void> {
  const failure = world.switches.takeFailure('smart-configuration');
  if (failure) {
    ctx.status = failure.status;
    if (failure.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(failure.retryAfterSeconds));
    ctx.body = { error: 'planned failure (sandbox switch)' };
    return;
  }
  const mode = world.switches.smartConfiguration;
  if (mode === 'hang') {
    // Never answers: close() ends the connection, which is what a client's deadline must cope with.
    await world.switches.closed;
    return;
  }
  if (mode === 'error-500') {
    ctx.status = 500;
    ctx.body = { error: 'server_error' };
    return;
  }
  if (mode === 'not-json') {
    ctx.type = 'text/html';
    ctx.body = '<!doctype html><title>Maintenance</title><p>We will be back soon.</p>';
    return;
  }
  const body = smartConfiguration(world, brand);
  if (mode === 'no-s256') body.code_challenge_methods_supported = ['plain'];
  ctx.body = body;
}

const scopedTypes = (world: World): string[] =>
  world.records.holdsRecords ? [...READ.filter((type) => type !== 'Binary'), ...SEARCHED] : ['Patient', 'Observation'];

/** The types of whole records (fhir/record-store.ts): searched by patient, and read; Binary read. */
const SEARCHED = [
  'AllergyIntolerance',
  'CarePlan',
  'CareTeam',
  'Condition',
  'Device',
  'DiagnosticReport',
  'DocumentReference',
  'Encounter',
  'ExplanationOfBenefit',
  'Immunization',
  'MedicationRequest',
  'Observation',
  'Procedure',
  'Provenance',
  'Claim',
  'ImagingStudy',
  'MedicationAdministration',
  'SupplyDelivery',
];
const READ = ['Patient', 'Medication', 'Practitioner', 'PractitionerRole', 'Organization', 'Location', 'Binary'];

function wholeRecordResources() {
  const searchParam = [
    { name: 'patient', type: 'reference' },
    { name: '_lastUpdated', type: 'date' },
    { name: '_count', type: 'number' },
    { name: 'category', type: 'token' },
  ];
  return [
    ...READ.map((type) => ({ type, interaction: [{ code: 'read' }] })),
    ...SEARCHED.map((type) => ({ type, interaction: [{ code: 'read' }, { code: 'search-type' }], searchParam })),
  ];
}

export function capabilityStatement(world: World, brand: SandboxBrand): Record<string, unknown> {
  const urls = endpoints(world, brand.key);
  const oauthUris = {
    url: 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris',
    extension: [
      { url: 'authorize', valueUri: urls.authorization_endpoint },
      { url: 'token', valueUri: urls.token_endpoint },
      { url: 'revoke', valueUri: urls.revocation_endpoint },
    ],
  };
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: '2024-01-01',
    kind: 'instance',
    software: { name: 'Portico sandbox EHR' },
    implementation: { description: brand.name, url: fhirBase(world, brand.key) },
    fhirVersion: '4.0.1',
    format: ['json'],
    rest: [
      {
        mode: 'server',
        security: {
          extension: [oauthUris],
          service: [
            {
              coding: [
                { system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR' },
              ],
            },
          ],
        },
        resource: world.records.holdsRecords
          ? wholeRecordResources()
          : [
              { type: 'Patient', interaction: [{ code: 'read' }] },
              {
                type: 'Observation',
                interaction: [{ code: 'search-type' }],
                searchParam: [
                  { name: 'patient', type: 'reference' },
                  { name: '_lastUpdated', type: 'date' },
                  { name: '_count', type: 'number' },
                ],
              },
            ],
      },
    ],
  };
}
