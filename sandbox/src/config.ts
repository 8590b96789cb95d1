// The standalone sandbox's only reader of process.env: where `node dist/sandbox/src/main.js` listens.
export interface SandboxConfig {
  host: string;
  port: number;
  /** The demo client's redirect URIs (SANDBOX_REDIRECT_URIS, comma-separated): Portico's callback as it is served. */
  redirectUris: string[];
}

/** Portico's callback as `npm start` serves it (PORT 8080), by either loopback name. */
const DEFAULT_REDIRECT_URIS = [
  'http://127.0.0.1:8080/api/sdk/v1/connect/callback',
  'http://localhost:8080/api/sdk/v1/connect/callback',
];

export function readSandboxConfig(env: NodeJS.ProcessEnv = process.env): SandboxConfig {
  const port = Number(env.PORT ?? 8095);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`PORT must be a port number, not "${env.PORT}"`);
  const redirectUris = env.SANDBOX_REDIRECT_URIS?.split(',')
    .map((uri) => uri.trim())
    .filter(Boolean);
  for (const uri of redirectUris ?? [])
    if (!URL.canParse(uri)) throw new Error(`SANDBOX_REDIRECT_URIS must be comma-separated URLs, not "${uri}"`);
  return Object.freeze({
    host: '127.0.0.1',
    port,
    redirectUris: redirectUris?.length ? redirectUris : DEFAULT_REDIRECT_URIS,
  });
}
