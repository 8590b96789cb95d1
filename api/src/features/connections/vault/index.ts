// What the rest of connections (sync, the launch) and the command line use of the token vault.
export { TokenDisposal } from './disposal.js';
export { Keyring, type Sealed } from './keyring.js';
export {
  ReauthorizationRequired,
  TokensUnreadable,
  TokenVault,
  type ReauthorizationReason,
  type TokenBinding,
} from './vault.js';
export { rewrapTokens, vaultEntriesGauge, type RewrapReport } from './rewrap.js';
