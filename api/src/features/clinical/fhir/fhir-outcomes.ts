// How the FHIR base of a connection (fhir.routes.ts) tells its errors: as FHIR OperationOutcome resources with the
// status the gateway's problem details would have (docs/api.md, "The gateway as a FHIR server"), from its routes,
// from an unmatched path or method under FHIR_PREFIX, and from the request deadline (app.ts).
import { Type } from '@sinclair/typebox';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import { AppError, type FieldError } from '../../../shared/http/errors.js';
import { toAppError } from '../../../shared/http/problem-middleware.js';

/** Every path of the FHIR face starts so. */
export const FHIR_PREFIX = '/api/sdk/v1/fhir/';
export const FHIR_JSON = 'application/fhir+json; charset=utf-8';

export const OperationOutcome = Type.Object(
  {
    resourceType: Type.Literal('OperationOutcome'),
    issue: Type.Array(
      Type.Object({
        severity: Type.Literal('error'),
        code: Type.String({ description: 'A FHIR issue type: security, not-found, invalid, throttled or exception.' }),
        details: Type.Object({ text: Type.String({ description: 'The Portico error code (or denial reason).' }) }),
        diagnostics: Type.String(),
      }),
    ),
  },
  { description: 'A FHIR R4 OperationOutcome (application/fhir+json): how every error on the FHIR base is told.' },
);

/** The FHIR issue type of an HTTP status. */
function issueType(status: number): string {
  if (status === 401 || status === 403) return 'security';
  if (status === 404) return 'not-found';
  if (status === 429) return 'throttled';
  if (status >= 500) return 'exception';
  return 'invalid';
}

/** An error as an OperationOutcome, with the status and headers its problem details would have. */
export function renderOutcome(ctx: Context, error: AppError): void {
  ctx.remove('ETag');
  ctx.remove('Cache-Control');
  ctx.remove('Vary');
  ctx.remove('Location');
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  ctx.status = error.status;
  ctx.type = FHIR_JSON;
  ctx.body = outcomeOf(error);
}

/** The OperationOutcome of an error: its FHIR issue type, and the Portico code (or denial reason) in details. */
export function outcomeOf(error: AppError) {
  const reason = (error.details as { reason?: unknown }).reason;
  const fields = ((error.details as { errors?: FieldError[] }).errors ?? []).slice(1);
  const issue = (text: string, diagnostics: string) => ({
    severity: 'error',
    code: issueType(error.status),
    details: { text },
    diagnostics,
  });
  return {
    resourceType: 'OperationOutcome',
    issue: [
      issue(typeof reason === 'string' ? reason : error.code, error.detail),
      ...fields.map((field) => issue(error.code, `${field.in} "${field.name}": ${field.detail}`)),
    ],
  };
}

/**
 * Under FHIR_PREFIX, every failure (and an unmatched path or method) as an OperationOutcome with the status the
 * problem details would have had; logged as the problem middleware logs them. Mounted just inside it.
 */
export function fhirOutcomes(logger: Logger): Middleware {
  return async function fhirOutcomes(ctx, next) {
    if (!ctx.path.startsWith(FHIR_PREFIX)) {
      await next();
      return;
    }
    try {
      await next();
      if (ctx.body == null && ctx.status === 404)
        throw new AppError('NOT_FOUND', `No FHIR interaction is defined at ${ctx.path}.`);
      if (ctx.body == null && ctx.status === 405)
        throw new AppError(
          'METHOD_NOT_ALLOWED',
          `${ctx.method} is not allowed on ${ctx.path}.`,
          {},
          {
            Allow: String(ctx.response.get('Allow')),
          },
        );
    } catch (error) {
      const known = toAppError(error);
      if (known && known.status >= 500)
        logger.warn({ err: error, requestId: ctx.state.requestId }, 'dependency failure');
      if (!known) logger.error({ err: error, requestId: ctx.state.requestId }, 'unexpected error');
      renderOutcome(
        ctx,
        known ??
          new AppError(
            'INTERNAL_ERROR',
            `An unexpected error occurred; quote request id ${String(ctx.state.requestId)}.`,
          ),
      );
    }
  };
}
