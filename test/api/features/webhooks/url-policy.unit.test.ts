import { expect } from 'chai';
import { AppError } from '../../../../api/src/shared/http/errors.js';
import { checkWebhookUrl, type Resolver, type UrlPolicy } from '../../../../api/src/features/webhooks/url-policy.js';
import { NOT_PUBLIC } from '../../../../testkit/addresses.js';

const DNS: Record<string, string[]> = {
  'public.test': ['93.184.215.14'],
  'public6.test': ['2606:4700:4700::1111'],
  'both.test': ['93.184.215.14', '2606:4700:4700::1111'],
  'internal.test': ['10.0.0.7'],
  'metadata.test': ['169.254.169.254'],
  'mixed.test': ['93.184.215.14', '127.0.0.1'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'ula.test': ['fd00::1'],
  localhost: ['127.0.0.1', '::1'],
  'nothing.test': [],
};

const lookups: string[] = [];
const resolve: Resolver = async (host) => {
  lookups.push(host);
  const addresses = DNS[host];
  if (addresses) return addresses;
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
const strict: UrlPolicy = { allowPrivate: false, resolve };
const lax: UrlPolicy = { allowPrivate: true, resolve };

async function expectRefused(url: string, policy: UrlPolicy = strict): Promise<void> {
  let error: unknown;
  try {
    await checkWebhookUrl(url, policy);
  } catch (e) {
    error = e;
  }
  expect(error, `${url} was admitted`).to.be.instanceOf(AppError);
  expect((error as AppError).status).to.equal(400);
  expect((error as AppError).details).to.have.nested.property('errors[0].name', 'url');
}

/** Spellings of private IPv4 addresses that URL parsers turn into dotted quads. */
const NUMERIC_FORMS = [
  '2130706433',
  '0x7f000001',
  '0X7F000001',
  '017700000001',
  '0x7f.1',
  '127.1',
  '127.0.1',
  '0177.0.0.1',
  '0177.1',
  '0x7f.0.0.1',
  '0x7F.0x0.0x0.0x1',
  '127.0.0.1.',
  '0',
  '0x0',
  '167772161',
  '0xa.0.0.1',
  '012.0.0.1',
  '3232235777',
  '0xc0.0xa8.0x1.0x1',
  '2852039166',
  '0xa9.0xfe.0xa9.0xfe',
  '0251.0376.0251.0376',
  '1681915905',
];

describe('platform: webhook URL policy', () => {
  describe('checkWebhookUrl', () => {
    it('admits https URLs of public hosts and addresses, normalised', async () => {
      expect(await checkWebhookUrl('https://public.test/hooks/portico?x=1', strict)).to.equal(
        'https://public.test/hooks/portico?x=1',
      );
      expect(await checkWebhookUrl('HTTPS://Public.TEST:8443/a', strict)).to.equal('https://public.test:8443/a');
      expect(await checkWebhookUrl('https://public6.test/', strict)).to.equal('https://public6.test/');
      expect(await checkWebhookUrl('https://both.test/', strict)).to.equal('https://both.test/');
      expect(await checkWebhookUrl('https://93.184.215.14/hook', strict)).to.equal('https://93.184.215.14/hook');
      expect(await checkWebhookUrl('https://[2606:4700:4700::1111]/hook', strict)).to.equal(
        'https://[2606:4700:4700::1111]/hook',
      );
    });

    it('admits port 443 and ports 1024 to 65535, and refuses any other port', async () => {
      for (const url of [
        'https://public.test:443/',
        'https://public.test:1024/',
        'https://public.test:6379/',
        'https://public.test:65535/',
      ])
        expect(await checkWebhookUrl(url, strict)).to.be.a('string');
      for (const url of [
        'https://public.test:0/',
        'https://public.test:22/',
        'https://public.test:25/',
        'https://public.test:80/',
        'https://public.test:1023/',
        'https://93.184.215.14:25/',
      ])
        await expectRefused(url);
      // Also where private addresses are allowed (development): http's default port is 80.
      for (const url of ['http://127.0.0.1/in', 'http://127.0.0.1:22/in']) await expectRefused(url, lax);
      expect(await checkWebhookUrl('http://127.0.0.1:8080/in', lax)).to.equal('http://127.0.0.1:8080/in');
    });

    it('looks up the host name without brackets or port', async () => {
      lookups.length = 0;
      await checkWebhookUrl('https://public.test:9443/x', strict);
      expect(lookups).to.deep.equal(['public.test']);
    });

    for (const form of NUMERIC_FORMS) {
      it(`refuses the private IPv4 spelt ${form}`, async () => {
        await expectRefused(`https://${form}/hook`);
      });
    }

    it('refuses every non-public address written as an IPv6 literal', async () => {
      for (const [, addresses] of NOT_PUBLIC) {
        for (const address of addresses.filter((a) => a.includes(':')))
          await expectRefused(`https://[${address}]/hook`);
      }
    });

    it('refuses hosts that resolve to a non-public address, even one of several', async () => {
      for (const host of ['internal.test', 'metadata.test', 'mixed.test', 'mapped.test', 'ula.test', 'localhost'])
        await expectRefused(`https://${host}/hook`);
    });

    it('refuses hosts that do not resolve or resolve to nothing', async () => {
      await expectRefused('https://unknown.test/hook');
      await expectRefused('https://nothing.test/hook');
    });

    it('names the development setting when it refuses what a local receiver needs (http, loopback)', async () => {
      for (const url of ['http://localhost:3000/hook', 'https://127.0.0.1:8443/hook']) {
        const refused = await checkWebhookUrl(url, strict).catch((error: unknown) => error as AppError);
        expect((refused as AppError).detail, url).to.include('PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS=true');
      }
    });

    it('refuses other schemes, relative URLs, user information and over-long URLs', async () => {
      for (const url of [
        'http://public.test/hook',
        'ftp://public.test/hook',
        'file:///etc/passwd',
        'javascript:alert(1)',
        '//public.test/hook',
        '/hook',
        'public.test/hook',
        '',
      ]) {
        await expectRefused(url);
      }
      await expectRefused('https://user:secret@public.test/hook');
      await expectRefused('https://user@public.test/hook');
      await expectRefused(`https://public.test/${'a'.repeat(2048)}`);
    });

    it('admits exactly 2048 characters', async () => {
      const base = 'https://public.test/';
      expect(await checkWebhookUrl(base + 'a'.repeat(2048 - base.length), strict)).to.have.length(2048);
    });

    describe('with allowPrivate (development and tests)', () => {
      it('admits http and loopback, private and link-local hosts', async () => {
        expect(await checkWebhookUrl('http://127.0.0.1:8080/hook', lax)).to.equal('http://127.0.0.1:8080/hook');
        expect(await checkWebhookUrl('http://localhost:3000/hook', lax)).to.equal('http://localhost:3000/hook');
        expect(await checkWebhookUrl('https://internal.test/hook', lax)).to.equal('https://internal.test/hook');
        expect(await checkWebhookUrl('http://[::1]:9000/', lax)).to.equal('http://[::1]:9000/');
        expect(await checkWebhookUrl('http://169.254.169.254:8080/', lax)).to.equal('http://169.254.169.254:8080/');
      });

      it('still refuses other schemes and user information', async () => {
        await expectRefused('ftp://127.0.0.1/hook', lax);
        await expectRefused('http://user:secret@127.0.0.1/hook', lax);
        await expectRefused('not a url', lax);
      });
    });
  });
});

describe("url policy: DNS trouble is not the client's fault", () => {
  const policy = (resolve: (host: string) => Promise<string[]>) => ({
    allowPrivate: false,
    resolve,
    resolveTimeoutMs: 50,
  });

  it('answers 503 when the lookup times out', async () => {
    const never = () => new Promise<string[]>(() => {});
    const error = await checkWebhookUrl('https://slow.example.test/hook', policy(never)).then(
      () => undefined,
      (e: unknown) => e as AppError,
    );
    expect(error).to.include({ code: 'SERVICE_UNAVAILABLE', retryable: true });
  });

  it('answers 503 on a temporary failure (EAI_AGAIN) and 400 when the name does not exist', async () => {
    const temporary = async () => {
      throw Object.assign(new Error('try again'), { code: 'EAI_AGAIN' });
    };
    const missing = async () => {
      throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' });
    };
    const first = await checkWebhookUrl('https://flaky.example.test/', policy(temporary)).catch((e: AppError) => e);
    const second = await checkWebhookUrl('https://nowhere.example.test/', policy(missing)).catch((e: AppError) => e);
    expect((first as AppError).code).to.equal('SERVICE_UNAVAILABLE');
    expect((second as AppError).code).to.equal('BAD_REQUEST');
  });
});
