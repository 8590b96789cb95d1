// The access log in a patient's words (docs/connecting.md, "The patient's page"): "Companion read 42 lab results and
// vital signs from Mercy Hospital." One sentence per read, from the entry's counts and names alone.
import type { AccessEntry, AuditNames } from '../access-log/index.js';
import { plainCount, plainTypeName } from '../clinical/index.js';

/** Why a read was refused, as the patient would put it. */
const REFUSALS: Record<string, string> = {
  RESOURCE_TYPE_NOT_GRANTED: 'it is not allowed to read them',
  INSUFFICIENT_SCOPE: 'it is not allowed to read records',
  SUBJECT_NOT_ACTIVE: 'sharing was not active',
  APP_NOT_INSTALLED: 'the app was suspended',
  CONNECTION_NOT_FOUND: 'this connection is not its own',
};

/** The kinds of records a read was about, lower case: "lab results and vital signs", "records". */
function what(entry: AccessEntry): string {
  if (entry.resourceType === null) return 'records';
  return plainTypeName(entry.resourceType)
    .replace(/^Your /, '')
    .replace(/^./, (c) => c.toLowerCase());
}

export function readSentence(entry: AccessEntry, names: AuditNames): string {
  const app = names.app ?? 'An app';
  const from = names.brand ? ` from ${names.brand}` : '';
  if (entry.denied !== undefined)
    return `${app} was refused your ${what(entry)}${from}: ${REFUSALS[entry.denied] ?? 'it was not allowed'}.`;
  if (entry.count === 0) return `${app} looked for your ${what(entry)}${from} and received none.`;
  const counted =
    entry.resourceType === null
      ? `${entry.count.toLocaleString('en-US')} ${entry.count === 1 ? 'record' : 'records'} of your whole record`
      : plainCount(entry.resourceType, entry.count);
  return `${app} read ${counted}${from}.`;
}

const DATE = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
const TIME = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', timeZone: 'UTC', hour12: false });

/** "3 December 2026, 14:05 UTC". */
export const when = (at: Date): string => `${DATE.format(at)}, ${TIME.format(at)} UTC`;
