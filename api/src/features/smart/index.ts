// The SMART App Launch client (docs/connecting.md): discovery, the OAuth client and the client registrations. It
// knows no other feature; connections (the launch and the token vault) use it through this file.
export { DiscoveryError, SmartDiscovery, underBase, type SmartServer } from './discovery.js';
export { authorizationUrl, ehrErrorCode, OAuthFailure, SmartOAuthClient, type GrantedTokens } from './oauth-client.js';
export { loadRegistrations, pinnedEndpointProblem, Registrations, type SmartRegistration } from './registrations.js';
