// Choices made where the seed and CONTRACT.md are silent, published in /openapi.json's description so that
// clients can rely on them.
export const OPENAPI_NOTES = [
  'Portico: the platform surface (`/api/platform/v1`, secret `sk_` keys), the SDK surface (`/api/sdk/v1`) and the internal admin surface (`/api/admin/v1`, only when PORTICO_ADMIN_TOKEN is set). Errors are problem details (RFC 9457) with `code`, `details` and `retryable`.',
  '**Decisions recorded here** (where the interface contract is silent):',
  '- Optional patient fields that were not given are absent from the profile (never `null`); a webhook endpoint without a description has no `description` field.',
  '- Patient DELETE is authorized like the read: unknown, malformed or foreign ids get the same 403 `PLATFORM_ACCESS_DENIED`; a deleted patient is 404.',
  '- Names are 1-100 characters, must contain a visible character and no control characters; webhook descriptions up to 500 characters without control characters.',
  '- Idempotency records are kept in MongoDB for 24 hours. When the request that first used an `Idempotency-Key` executed but its response was lost (the server handling it stopped before recording it, or it failed part-way after changing something), a request with the same key gets 409 `IDEMPOTENCY_KEY_EXECUTED` (`retryable: false`, stored and replayed like any outcome): the operation is never run again; read the resource to see its state. A 503 from an idempotent request whose writes may still have landed is safe to retry with the same key: the retry gets 409 `IDEMPOTENCY_KEY_IN_USE` for up to 15 s, then the replayed outcome, `IDEMPOTENCY_KEY_EXECUTED`, or a first execution.',
  '- A malformed `If-None-Match` is ignored (the full representation is sent); a malformed `If-Match` is 400.',
  '- A webhook URL whose host does not resolve is refused with 400, as is a URL with a fragment. `"*"` in `eventTypes` must stand alone.',
  '- A PATCH that sets fields to their current values changes nothing and keeps `_version`, like `{}`.',
  '- Webhook endpoint reads and writes send `Cache-Control: private, no-cache` and `Vary: Authorization`, like patients.',
  '- `_links.self.href` of a list page names the page actually returned (`limit` and, when given, `cursor`).',
  '- A query parameter given twice is 400. Request bodies are read only by operations that take one.',
  '- `/readyz` answers 503 problem details naming the unreachable dependency; `checks.catalog` is false until the active catalog snapshot, if any, is loaded.',
  '- Catalog brands also carry `aliases` (other names of the same FHIR system); `city`, `state`, `portalUrl` and `logoUrl` are `null` when unknown. `state` is a two-letter code.',
  '- Catalog search: every query word, not only the last, matches as a prefix of a word start; apostrophes are dropped and other punctuation separates words. Tiers: the name starts with the query; all words in the name; some word needed an alias; some word needed the city or state. A parameter given twice is 400.',
  '- With no active catalog snapshot, search answers `{brands: [], count: 0}` and lookups 404. Any brand id that is not in the served snapshot is 404, whatever its length or characters.',
  '- Catalog assets: a key that was never stored is 404; object storage that cannot answer is 503 `SERVICE_UNAVAILABLE` (retryable), never a 404. Without `PUBLIC_BASE_URL`, a catalog request that names no host (HTTP/1.0 without `Host`) is 400.',
  '- Catalog ETags are strong: `"<snapshot id>.<hash of the normalised request>"`, so they change exactly when a new snapshot is activated. `logoUrl` is absolute: `PUBLIC_BASE_URL` when set, else the request\'s scheme and host.',
  '- Logo redirects point to `/api/sdk/v1/catalog/assets/{key}` (or the object store\'s public URL), content-addressed PNGs (or WebP with `format=webp`) sent with `Cache-Control: public, max-age=31536000, immutable`. `format` is `png` (default) or `webp`, case-sensitive; anything else is 400. Snapshots published before WebP renditions existed answer `format=webp` with the PNG.',
];
