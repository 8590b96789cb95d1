// What other features may use of the token vault (docs/architecture.md): everything else in this folder is its own.
export { Keyring, type Sealed } from './keyring.js';
export {
  ReauthorizationRequired,
  TokensUnreadable,
  TokenVault,
  type ReauthorizationReason,
  type TokenBinding,
} from './vault.js';
export { rewrapTokens, vaultEntriesGauge, type RewrapReport } from './rewrap.js';
