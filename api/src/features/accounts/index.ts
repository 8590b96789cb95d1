// What other features may use of accounts (docs/architecture.md): everything else in this folder is its own.
export type { AccountStore, CustomerAccount } from './store.js';
