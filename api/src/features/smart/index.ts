// What other features may use of smart (docs/architecture.md): discovery, the OAuth client and the registrations,
// which the token vault refreshes with. The launch itself is wired by health-links.ts.
export { DiscoveryError, SmartDiscovery, underBase, type SmartServer } from './discovery.js';
export { OAuthFailure, SmartOAuthClient, type GrantedTokens } from './oauth-client.js';
export { Registrations, type SmartRegistration } from './registrations.js';
