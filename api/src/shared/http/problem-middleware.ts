// Top of the chain: turns every failure below it into problem details, and unmatched routes into 404/405.
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import { DependencyUnavailableError } from '#core/errors.js';
import { isMongoUnavailable, isDuplicateKey } from '#core/infra/mongo.js';
import { isRedisUnavailable } from '#core/infra/redis.js';
import { AppError, problemOf, serviceUnavailable } from './errors.js';

export function renderProblem(ctx: Context, error: AppError): void {
  ctx.remove('ETag');
  ctx.remove('Location');
  ctx.remove('Cache-Control');
  ctx.remove('Vary');
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  ctx.status = error.status;
  ctx.body = problemOf(error, ctx.path);
  ctx.type = 'application/problem+json';
}

/** Maps what libraries throw onto the error codes docs/api.md lists; undefined means "unexpected". */
export function toAppError(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error;
  const unavailable = unavailableDependency(error);
  if (unavailable) return serviceUnavailable(unavailable);
  if (isDuplicateKey(error)) {
    return new AppError('CONFLICT', 'The request conflicts with an existing resource.');
  }
  // Errors raised by Koa and raw-body carry an HTTP status and, for client errors, are safe to describe.
  const status = (error as { status?: unknown; expose?: unknown }).status;
  if (typeof status === 'number' && (error as { expose?: unknown }).expose === true) {
    if (status === 413) return new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than allowed.');
    if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request media type is not accepted.');
    if (status >= 400 && status < 500) return new AppError('BAD_REQUEST', 'The request could not be read.');
  }
  return undefined;
}

/**
 * The dependency that `error` says is down, stalled or closed, if it does: a driver's error, or one that
 * carries such an error as its cause (a wrapper that added context).
 */
export function unavailableDependency(error: unknown): string | undefined {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (cause instanceof DependencyUnavailableError) return cause.dependency;
    if (isMongoUnavailable(cause)) return 'MongoDB';
    if (isRedisUnavailable(cause)) return 'Redis';
  }
  return undefined;
}

export function problemMiddleware(logger: Logger): Middleware {
  return async function problems(ctx, next) {
    try {
      await next();
      if (ctx.body == null && ctx.status === 404) {
        throw new AppError('NOT_FOUND', `No operation is defined at ${ctx.path}.`);
      }
      if (ctx.body == null && ctx.status === 405) {
        throw new AppError(
          'METHOD_NOT_ALLOWED',
          `${ctx.method} is not allowed on ${ctx.path}.`,
          {},
          { Allow: String(ctx.response.get('Allow')) },
        );
      }
    } catch (error) {
      const known = toAppError(error);
      if (known) {
        if (known.status >= 500) logger.warn({ err: error, requestId: ctx.state.requestId }, 'dependency failure');
        renderProblem(ctx, known);
        return;
      }
      logger.error({ err: error, requestId: ctx.state.requestId }, 'unexpected error');
      renderProblem(
        ctx,
        new AppError(
          'INTERNAL_ERROR',
          `An unexpected error occurred; quote request id ${String(ctx.state.requestId)}.`,
        ),
      );
    }
  };
}
