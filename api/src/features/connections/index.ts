// What other features and the composition root use of connections (docs/architecture.md, "Connections"): the
// module's builder, and what the command line and the HTTP handler need of the launch and the vault.
export { createConnections, type Connections, type ConnectionUses } from './create.js';
export { ConnectionService, MAX_CONNECTIONS_PER_USER } from './lifecycle.js';
export { ASSETS_PATH, connectCsp, imageOriginsOf } from './launch/connect-pages.js';
export { escapeHtml, isSignInPath, SIGN_IN_DEADLINE_MS, SIGN_IN_DEADLINE_PAGE } from './launch/page.js';
export { startSandboxProcess, type RunningSandbox } from './launch/sandbox.js';
export { rewrapTokens, type RewrapReport } from './vault/index.js';
