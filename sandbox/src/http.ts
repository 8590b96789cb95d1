// Small HTTP helpers the OAuth and FHIR routes share: a strict form reader, one-valued parameters, and the Date
// header from the sandbox's clock.
import type { Context, Next } from 'koa';

const FORM_LIMIT_BYTES = 64 * 1024;

export class BadRequest extends Error {}

/** The body as a form; anything but application/x-www-form-urlencoded is refused, as OAuth requires. */
export async function readForm(ctx: Context): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded'))
    throw new BadRequest('the body must be application/x-www-form-urlencoded');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > FORM_LIMIT_BYTES) throw new BadRequest('the body is too large');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** A parameter that OAuth allows at most once (RFC 6749 §3.1, §3.2); repeating it is an error. */
export function single(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw new BadRequest(`${name} is repeated`);
  return values[0] === '' ? undefined : values[0];
}

export const queryParams = (ctx: Context): URLSearchParams => new URLSearchParams(ctx.querystring);

/**
 * Every response's Date from the sandbox's injected clock rather than the machine's (Node keeps a Date that is
 * set), so that a test that moves the clock sees the server's time move with it.
 */
export const dateFromClock =
  (now: () => number) =>
  async (ctx: Context, next: Next): Promise<void> => {
    await next();
    ctx.set('Date', new Date(now()).toUTCString());
  };
