// Where the SDK's generated types (sdk/js/src/schema.ts) come from: the OpenAPI document of the public API (the
// platform and SDK surfaces, as a deployment without PORTICO_ADMIN_TOKEN serves it), rendered by
// openapi-typescript's Node API and formatted as the repository formats TypeScript. The document is built in
// process without a database: createApp assembles it from the routers' schemas alone and calls no service, so
// services that are never called stand in for the real ones (test/sdk/schema.test.ts checks that the result is
// exactly what a real API serves, and that the committed file is up to date).
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';
import { format, resolveConfig } from 'prettier';
import { pino } from 'pino';
import { createApp } from '../../../api/src/app.js';
import { loadConfig } from '../../../api/src/config.js';
import type { Services } from '../../../api/src/wiring.js';
import { systemClock } from '#core/clock.js';
import { repoRoot } from '#core/infra/repo-root.js';

export const SCHEMA_FILE = path.join(repoRoot(), 'sdk', 'js', 'src', 'schema.ts');

const HEADER = `${COMMENT_HEADER.trimEnd()}
// Generated from the API's /openapi.json: regenerate with \`npm run generate --prefix sdk/js\` (sdk/js/README.md).

`;

/** Stands in for every service: any property is another stand-in, and calling one returns one. */
function unused(): never {
  const stand: unknown = new Proxy(function () {}, {
    get: (_target, property) => (property === 'then' ? undefined : unused()),
    apply: () => unused(),
  });
  return stand as never;
}

/** The public API's OpenAPI document, built in process (no database, no other service). */
export async function publicOpenApiDocument(): Promise<OpenAPI3> {
  const config = loadConfig({ LOG_LEVEL: 'silent' });
  const services: Services = unused();
  const { handler } = createApp({ config, services, clock: systemClock, logger: pino({ level: 'silent' }) });
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/openapi.json`);
    if (response.status !== 200) throw new Error(`/openapi.json answered ${response.status}`);
    return (await response.json()) as OpenAPI3;
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** The TypeScript source of sdk/js/src/schema.ts for `document`. */
export async function renderSchema(document: OpenAPI3): Promise<string> {
  // openapi-typescript reads (and may annotate) the object it is given: hand it a copy.
  const ast = await openapiTS(structuredClone(document), { silent: true });
  const options = (await resolveConfig(SCHEMA_FILE)) ?? {};
  return format(HEADER + astToString(ast), { ...options, filepath: SCHEMA_FILE });
}

export async function committedSchema(): Promise<string> {
  return readFile(SCHEMA_FILE, 'utf8');
}

/** `node dist/test/sdk/support/openapi-schema.js`: writes sdk/js/src/schema.ts. */
async function main(): Promise<void> {
  const source = await renderSchema(await publicOpenApiDocument());
  await writeFile(SCHEMA_FILE, source);
  console.log(`wrote ${path.relative(process.cwd(), SCHEMA_FILE)} (${source.length} characters)`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
