// The platform API's scopes (docs/api.md, "Authentication"): what a secret key may be issued with, and what each
// platform operation requires (requireScope in auth.ts). One list, so the key schema, the command line's help and
// the routes cannot name different ones.
export const PLATFORM_SCOPES = [
  'patient:read',
  'patient:write',
  'webhook:read',
  'webhook:write',
  'app_user:read',
  'app_user:write',
  'clinical:write',
] as const;

export type Scope = (typeof PLATFORM_SCOPES)[number];
