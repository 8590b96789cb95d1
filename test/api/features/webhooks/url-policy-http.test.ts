import { expect } from 'chai';
import { TestApi, withTestApi, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';

const BASE = '/api/platform/v1/webhook-endpoints';
const longUrl = (length: number) => {
  const prefix = 'https://long.example.test/';
  return prefix + 'a'.repeat(length - prefix.length);
};

// Every spelling of a place a webhook must never be sent to (server-side request forgery).
const REFUSED: [string, string][] = [
  ['an http URL', 'http://hooks.example.test/in'],
  ['another scheme', 'ftp://hooks.example.test/in'],
  ['a javascript: URL', 'javascript:alert(1)'],
  ['a relative path', '/hooks/in'],
  ['a scheme-relative URL', '//hooks.example.test/in'],
  ['a string that is not a URL', 'not a url'],
  ['an empty string', ''],
  ['user-info with a password', 'https://user:secret@hooks.example.test/in'],
  ['user-info without a password', 'https://user@hooks.example.test/in'],
  ['a URL over 2048 characters', longUrl(2049)],
  ['loopback 127.0.0.1', 'https://127.0.0.1/in'],
  ['loopback elsewhere in 127/8', 'https://127.8.9.10:8443/in'],
  ['IPv6 loopback [::1]', 'https://[::1]/in'],
  ['a decimal IPv4 host', 'https://2130706433/'],
  ['a hexadecimal IPv4 host', 'https://0x7f000001/'],
  ['an octal IPv4 host', 'https://0177.0.0.1/'],
  ['a shortened IPv4 host', 'https://127.1/'],
  ['mixed hexadecimal parts', 'https://0x7f.1/'],
  ['IPv4-mapped IPv6 loopback', 'https://[::ffff:127.0.0.1]/'],
  ['IPv4-mapped IPv6 in hexadecimal', 'https://[::ffff:7f00:1]/'],
  ['IPv4-mapped IPv6 private', 'https://[::ffff:10.1.2.3]/'],
  ['IPv4-compatible IPv6 loopback', 'https://[::127.0.0.1]/'],
  ['IPv4-compatible IPv6 metadata address', 'https://[::169.254.169.254]/latest/meta-data/'],
  ['IPv6 outside 2000::/3', 'https://[4000::1]/in'],
  ['a host resolving to the IPv4-compatible IPv6 metadata address', 'https://compat.example.test/in'],
  ['private 10/8', 'https://10.0.0.1/in'],
  ['private 192.168/16', 'https://192.168.1.20/in'],
  ['private 172.16/12 (low end)', 'https://172.16.0.1/in'],
  ['private 172.16/12 (high end)', 'https://172.31.255.254/in'],
  ['link-local metadata 169.254.169.254', 'https://169.254.169.254/latest/meta-data/'],
  ['IPv6 link-local', 'https://[fe80::1]/in'],
  ['IPv6 unique-local', 'https://[fd12:3456::1]/in'],
  ['unspecified 0.0.0.0', 'https://0.0.0.0/in'],
  ['unspecified [::]', 'https://[::]/in'],
  ['IPv4 multicast', 'https://224.0.0.1/in'],
  ['IPv6 multicast', 'https://[ff02::1]/in'],
  ['a host resolving to a private address', 'https://internal.example.test/in'],
  ['a host resolving to the metadata address', 'https://metadata.example.test/in'],
  ['a host with one loopback address among public ones', 'https://mixed.example.test/in'],
  ['a host resolving to IPv4-mapped loopback', 'https://mapped.example.test/in'],
  ['a host that does not resolve', 'https://nowhere.invalid/in'],
  ['localhost', 'https://localhost/in'],
];

const ACCEPTED: [string, string][] = [
  ['an https host name', 'https://hooks.example.test/in'],
  ['a port, path and query', 'https://hooks.example.test:8443/a/b?token=xyz&x=1'],
  ['a host with an IPv6 public address', 'https://v6.example.test/in'],
  ['a public IPv4 literal', 'https://93.184.215.14/hook'],
  ['a public IPv6 literal', 'https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/hook'],
  ['an address just outside 172.16/12', 'https://172.32.0.1/hook'],
  ['a URL of exactly 2048 characters', longUrl(2048)],
];

describe('platform: webhook endpoints — URL policy', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));

  const create = (body: unknown) => api.request('POST', BASE, { key: tenant.key, body });
  const stored = () => api.mongo.db.collection('webhook_endpoints').countDocuments({ accountId: tenant.accountId });
  const expectUrlRejected = (res: { status: number; headers: Headers; body: any }, what: string) => {
    expect(res.status, what).to.equal(400);
    expect(res.headers.get('content-type'), what).to.match(/^application\/problem\+json/);
    expect(res.body, what).to.include({ code: 'BAD_REQUEST', status: 400, retryable: false });
    expect(res.body.details.errors, what).to.be.an('array').that.is.not.empty;
    expect(
      res.body.details.errors.map((e: { name: string }) => e.name),
      what,
    ).to.include('url');
    expect(res.body.details.errors.find((e: { name: string }) => e.name === 'url').in, what).to.equal('body');
  };

  describe('on create', () => {
    for (const [what, url] of REFUSED) {
      it(`refuses ${what} with a 400 naming url, creating nothing`, async () => {
        const before = await stored();
        expectUrlRejected(await create(buildEndpoint({ url })), url);
        expect(await stored()).to.equal(before);
      });
    }

    for (const [what, url] of ACCEPTED) {
      it(`accepts ${what}`, async () => {
        const res = await create(buildEndpoint({ url }));
        expect(res.status, res.text).to.equal(201);
        expect(res.body.url).to.equal(url);
      });
    }
  });

  describe('on update', () => {
    const samples = REFUSED.filter(([, url]) =>
      [
        'http://hooks.example.test/in',
        'https://user:secret@hooks.example.test/in',
        'https://[::ffff:127.0.0.1]/',
        'https://0x7f000001/',
        'https://169.254.169.254/latest/meta-data/',
        'https://internal.example.test/in',
        'https://mixed.example.test/in',
        'https://nowhere.invalid/in',
        longUrl(2049),
      ].includes(url),
    );

    it('checks the same rules, leaving the endpoint unchanged', async () => {
      const created = await create(buildEndpoint());
      const path = `${BASE}/${created.body.id}`;
      expect(samples).to.have.length(9);
      for (const [what, url] of samples) {
        const res = await api.request('PATCH', path, {
          key: tenant.key,
          body: { url },
          headers: { 'content-type': 'application/merge-patch+json' },
        });
        expectUrlRejected(res, what);
      }
      const after = await api.request('GET', path, { key: tenant.key });
      expect(after.body).to.include({ url: created.body.url, _version: '1' });
    });

    it('accepts a new public URL', async () => {
      const created = await create(buildEndpoint());
      const res = await api.request('PATCH', `${BASE}/${created.body.id}`, {
        key: tenant.key,
        body: { url: 'https://93.184.215.14/moved' },
      });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ url: 'https://93.184.215.14/moved', _version: '2' });
    });
  });

  describe('with PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS=true', () => {
    let dev: TestApi;
    let owner: Tenant;

    before(async () => {
      dev = await TestApi.start({ env: { PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });
      owner = await dev.tenant();
    });
    after(() => dev.close());

    for (const url of [
      'http://127.0.0.1:9999/x',
      'https://10.0.0.1/in',
      'https://internal.example.test/in',
      'http://[::1]:8080/in',
    ]) {
      it(`admits ${url}`, async () => {
        const res = await dev.request('POST', BASE, { key: owner.key, body: buildEndpoint({ url }) });
        expect(res.status, res.text).to.equal(201);
        expect(res.body.url).to.equal(url);
      });
    }

    it('still refuses URLs that are not absolute http(s) URLs', async () => {
      for (const url of ['ftp://127.0.0.1/x', '/relative', longUrl(2049)]) {
        const res = await dev.request('POST', BASE, { key: owner.key, body: buildEndpoint({ url }) });
        expect(res.status, url).to.equal(400);
        expect(
          res.body.details.errors.map((e: { name: string }) => e.name),
          url,
        ).to.include('url');
      }
    });
  });
});
