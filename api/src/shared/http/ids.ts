// Identifier syntax shared by the routes and services that take ids from a path or a body.

/** A platform resource id: a lower-case UUID (v4 or v7). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * An app's own id for its user (docs/api.md, "Connecting a patient's health system"): 1–128 characters from
 * [A-Za-z0-9._:@-].
 */
export const APP_USER_ID = /^[A-Za-z0-9._:@-]{1,128}$/;
export const APP_USER_ID_RULE = 'must be 1-128 characters from A-Z a-z 0-9 . _ : @ -';
