// Every free-text field people type (patient names, webhook descriptions, account, app and key names) takes
// the same rule: no control, invisible-format or line-separator characters and no lone surrogates, but the
// joiners that Persian, Indic and emoji spellings need.
import { expect } from 'chai';
import type { Response } from '../../../../testkit/api.js';
import { TestApi, withTestApi, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint, buildPatient } from '../../../../testkit/factories.js';

const REFUSED: [string, string][] = [
  ['a C0 control', 'Ada\u0007'],
  ['a C1 control (NEL)', 'Ada\u0085'],
  ['a C1 control (CSI)', 'Ada\u009b31m'],
  ['a right-to-left override', 'Ada\u202egnp.exe'],
  ['a bidirectional isolate', 'Ada\u2066x\u2069'],
  ['a left-to-right mark', 'Ada\u200e'],
  ['a zero-width space', 'A\u200bda'],
  ['a word joiner', 'A\u2060da'],
  ['a soft hyphen', 'A\u00adda'],
  ['a byte order mark', '\ufeffAda'],
  ['tag characters (hidden text)', 'Ada\u{e0049}\u{e0047}\u{e004e}'],
  ['a line separator', 'Ada\u2028Lovelace'],
  ['a paragraph separator', 'Ada\u2029'],
  ['a lone high surrogate', 'Ada\ud800'],
  ['a lone low surrogate', '\udc00Ada'],
  ['nothing but joiners', '\u200d'],
  ['nothing but spaces and a non-joiner', ' \u200c '],
];

const ACCEPTED: [string, string][] = [
  ['Latin with diacritics', 'Zoë José-María O\u2019Brien'],
  ['Han', '李小龍'],
  ['Devanagari', 'नमस्ते'],
  ['a Devanagari conjunct with ZERO WIDTH JOINER', 'क्\u200dष'],
  ['Persian with ZERO WIDTH NON-JOINER', 'می\u200cخواهم'],
  ['an emoji ZWJ sequence with a variation selector', 'Ada 👩\u200d⚕\ufe0f'],
  ['an emoji with a skin tone', 'Ada 👍🏽'],
];

describe('http: free-text fields', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));

  /** Each free-text field: a request that sets it to `value`, and where the 400 must point. */
  const FIELDS: [string, string, (value: string) => Promise<Response>][] = [
    [
      'patient givenName',
      'givenName',
      (value) =>
        api.request('POST', '/api/platform/v1/patients', { key: tenant.key, body: buildPatient({ givenName: value }) }),
    ],
    [
      'patient familyName',
      'familyName',
      (value) =>
        api.request('POST', '/api/platform/v1/patients', {
          key: tenant.key,
          body: buildPatient({ familyName: value }),
        }),
    ],
    [
      'webhook endpoint description',
      'description',
      (value) =>
        api.request('POST', '/api/platform/v1/webhook-endpoints', {
          key: tenant.key,
          body: buildEndpoint({ description: value }),
        }),
    ],
    ['customer account name', 'name', (value) => api.admin('POST', '/customer-accounts', { name: value })],
    [
      'API key name',
      'name',
      (value) =>
        api.admin('POST', `/customer-accounts/${tenant.accountId}/api-keys`, { scopes: ['patient:read'], name: value }),
    ],
    [
      'app name',
      'name',
      (value) =>
        api.admin('POST', `/customer-accounts/${tenant.accountId}/apps`, {
          name: value,
          grants: {
            resourceTypes: ['Observation'],
            loincCodes: ['*'],
            confidentiality: ['N'],
            sensitivity: [],
            lookbackDays: null,
          },
        }),
    ],
  ];

  for (const [field, name, send] of FIELDS) {
    describe(field, () => {
      it('refuses control, invisible format and separator characters and lone surrogates with a 400 naming the field', async () => {
        for (const [what, value] of REFUSED) {
          if (name === 'description' && what.startsWith('nothing but')) continue; // a description may be blank
          const res = await send(value);
          expect(res.status, `${what}: ${res.text}`).to.equal(400);
          const error = res.body.details.errors.find((e: { name: string }) => e.name === name);
          expect(error, what).to.not.equal(undefined);
          // A lone surrogate is refused before any field is read: text must be Unicode
          // (api/src/shared/http/validate.ts).
          expect(error.detail, what).to.match(
            what.includes('surrogate')
              ? /^unpaired surrogate$/
              : /^must not (be blank, nor )?contain control characters/,
          );
        }
      });

      it('accepts every script, and the joiners their spellings and emoji need', async () => {
        for (const [what, value] of ACCEPTED) {
          const res = await send(value);
          expect(res.status, `${what}: ${res.text}`).to.equal(201);
          if (name !== 'name' || field === 'customer account name' || field === 'app name')
            expect(res.body[name], what).to.equal(value);
        }
      });
    });
  }

  it('applies the same rule to a webhook description changed by PATCH', async () => {
    const created = await api.request('POST', '/api/platform/v1/webhook-endpoints', {
      key: tenant.key,
      body: buildEndpoint(),
    });
    const path = `/api/platform/v1/webhook-endpoints/${created.body.id}`;
    const patch = (description: string) =>
      api.request('PATCH', path, {
        key: tenant.key,
        body: { description },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
    expect((await patch('Orders \u202eevil')).status).to.equal(400);
    expect((await patch('Orders 📦\u200d')).status).to.equal(200);
  });
});
