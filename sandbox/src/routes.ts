// The sandbox's routes, per brand: /oauth/{brand}/… for the authorization server, /fhir/{brand}/… for the FHIR
// server. A table of contents: each handler lives with its subject.
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { bearer } from './fhir/access.js';
import { capabilityStatement, serveSmartConfiguration } from './fhir/discovery.js';
import { searchObservations } from './fhir/observations.js';
import { sendOutcome } from './fhir/outcome.js';
import { readOwnPatient, readPatient } from './fhir/patient.js';
import { readBinary, readRecord, searchRecords } from './fhir/records.js';
import { decideAuthorization, startAuthorization } from './oauth/authorize.js';
import { revokeEndpoint } from './oauth/revoke.js';
import { tokenEndpoint } from './oauth/token.js';
import type { SandboxBrand } from './types.js';
import { fhirBase, type World } from './world.js';

export function sandboxRouter(world: World): Router {
  const router = new Router();
  const brandOf = (ctx: Context): SandboxBrand | undefined =>
    world.brands.find((brand) => brand.key === (ctx.params as Record<string, string>).brand);
  const withBrand =
    (handler: (brand: SandboxBrand, ctx: Context) => unknown) =>
    async (ctx: Context): Promise<void> => {
      const brand = brandOf(ctx);
      if (!brand) {
        ctx.status = 404;
        ctx.body = { error: 'no such sandbox brand' };
        return;
      }
      await handler(brand, ctx);
    };

  router.get('/', (ctx) => {
    ctx.body = {
      sandbox: 'Portico sandbox EHR',
      brands: world.brands.map((b) => ({ ...b, fhirBaseUrl: fhirBase(world, b.key) })),
    };
  });

  router.get(
    '/oauth/:brand/authorize',
    withBrand((brand, ctx) => startAuthorization(world, brand, ctx)),
  );
  router.post(
    '/oauth/:brand/authorize',
    withBrand((brand, ctx) => decideAuthorization(world, brand, ctx)),
  );
  router.post(
    '/oauth/:brand/token',
    withBrand((brand, ctx) => tokenEndpoint(world, brand.key, ctx)),
  );
  router.post(
    '/oauth/:brand/revoke',
    withBrand((brand, ctx) => revokeEndpoint(world, brand.key, ctx)),
  );

  router.get(
    '/fhir/:brand/.well-known/smart-configuration',
    withBrand((brand, ctx) => {
      world.stats.discoveryRequests += 1;
      return serveSmartConfiguration(world, brand, ctx);
    }),
  );
  const fhir = new Router({ prefix: '/fhir/:brand' });
  fhir.use(plannedFhirFailures(world));
  fhir.get(
    '/metadata',
    withBrand((brand, ctx) => {
      ctx.type = 'application/fhir+json';
      ctx.body = capabilityStatement(world, brand);
    }),
  );
  const param = (ctx: Context, name: string) => (ctx.params as Record<string, string>)[name]!;
  /** Whether the request's token is for a patient with a whole record (then fhir/records.ts answers). */
  const wholeRecord = (brand: SandboxBrand, ctx: Context) => {
    const match = /^bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
    const token = match ? world.grants.accessToken(match[1]!) : undefined;
    return token !== undefined && world.records.hasRecord(brand.key, token.family.patientId);
  };
  fhir.get(
    '/Patient/:id',
    withBrand((brand, ctx) =>
      wholeRecord(brand, ctx)
        ? readOwnPatient(world, brand.key, ctx, param(ctx, 'id'))
        : readPatient(world, brand.key, ctx, param(ctx, 'id')),
    ),
  );
  fhir.get(
    '/Observation',
    withBrand((brand, ctx) =>
      wholeRecord(brand, ctx)
        ? searchRecords(world, brand.key, ctx, 'Observation')
        : searchObservations(world, brand.key, ctx),
    ),
  );
  fhir.get(
    '/Binary/:id',
    withBrand((brand, ctx) => readBinary(world, brand.key, ctx, param(ctx, 'id'))),
  );
  fhir.get(
    '/:type',
    withBrand((brand, ctx) => searchRecords(world, brand.key, ctx, param(ctx, 'type'))),
  );
  fhir.get(
    '/:type/:id',
    withBrand((brand, ctx) => readRecord(world, brand.key, ctx, param(ctx, 'type'), param(ctx, 'id'))),
  );
  fhir.all(
    '/{*rest}',
    withBrand((brand, ctx) => {
      if (bearer(world, brand.key, ctx))
        sendOutcome(ctx, 404, 'this sandbox serves searches by patient, reads and Binary only');
    }),
  );
  router.use(fhir.routes());
  return router;
}

const discovery = (ctx: Context) => ctx.path.endsWith('/.well-known/smart-configuration');

/** Counts FHIR requests and answers the ones a failNext('fhir') planned, before any other check. */
function plannedFhirFailures(world: World) {
  return async (ctx: Context, next: Next): Promise<void> => {
    if (!discovery(ctx)) {
      world.stats.fhirRequests += 1;
      const failure = world.switches.takeFailure('fhir');
      if (failure)
        return sendOutcome(ctx, failure.status, 'planned failure (sandbox switch)', failure.retryAfterSeconds);
    }
    await next();
  };
}
