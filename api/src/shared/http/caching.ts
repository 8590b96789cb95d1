/** Per-credential resources: caches must revalidate, and never share one credential's copy with another. */
export const PRIVATE_NO_CACHE = { 'Cache-Control': 'private, no-cache', Vary: 'Authorization' } as const;
