// What other features may use of the catalog (docs/architecture.md): where a brand's logo is served.
export { logoPath } from './presenter.js';
