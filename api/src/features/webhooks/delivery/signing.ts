// Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-signature` carries
// `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` under each signing secret, space-separated, so a
// receiver holding either secret verifies a delivery during a rotation. Secrets are `whsec_` + base64 of 32
// random bytes; the HMAC key is those bytes.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** The value of `webhook-signature` for one message under every given secret. */
export function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  return secrets
    .map(
      (secret) =>
        `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`,
    )
    .join(' ');
}
