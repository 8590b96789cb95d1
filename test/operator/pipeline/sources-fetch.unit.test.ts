import { expect } from 'chai';
import nock from 'nock';
import { FetchError } from '#core/net/fetch.js';
import { fetchSourceList } from '../../../operator/src/pipeline/sources/fetch.js';

describe('operator: fetching source lists', () => {
  afterEach(() => nock.cleanAll());

  const refusal = (url: string) =>
    fetchSourceList(url).then(
      () => 'fetched',
      (error: Error) => error.message,
    );

  it('refuses anything but https, and private or loopback destinations, before sending a request', async () => {
    for (const url of [
      'http://vendor.example/list.json',
      'file:///etc/passwd',
      'https://127.0.0.1/list.json',
      'https://10.1.2.3/list.json',
      'https://[::1]/list.json',
      'https://169.254.169.254/latest',
    ]) {
      expect(await refusal(url), url).to.not.equal('fetched');
    }
  });

  it('refuses IPv6 hosts outside 2000::/3 by the address policy (IPv4-compatible ::a.b.c.d included)', async () => {
    for (const url of [
      'https://[::127.0.0.1]/list.json',
      'https://[::169.254.169.254]/latest',
      'https://[::a00:1]/list.json',
      'https://[4000::1]/list.json',
    ]) {
      const error = await fetchSourceList(url).catch((e: unknown) => e);
      expect(error, url).to.be.instanceOf(FetchError).and.include({ reason: 'refused-address' });
    }
  });

  it('follows a redirect, re-checking where it leads', async () => {
    nock('https://93.184.215.14')
      .get('/old.json')
      .reply(302, '', { location: 'https://93.184.215.14/new.json' })
      .get('/new.json')
      .reply(200, '{"Endpoints":[]}');
    expect(await fetchSourceList('https://93.184.215.14/old.json')).to.equal('{"Endpoints":[]}');
    nock('https://93.184.215.14').get('/sneaky.json').reply(302, '', { location: 'https://127.0.0.1/admin' });
    expect(await refusal('https://93.184.215.14/sneaky.json')).to.not.equal('fetched');
  });

  it('reports a non-200 answer as a fetch error, not a logo error', async () => {
    nock('https://93.184.215.14').get('/gone.json').reply(503, 'down');
    const error = await fetchSourceList('https://93.184.215.14/gone.json').catch((e: unknown) => e);
    expect(error).to.be.instanceOf(FetchError).and.include({ reason: 'http-status' });
    expect((error as Error).message).to.match(/503/);
  });

  it("says who asks: the source-list user agent, not the logo renderer's", async () => {
    let userAgent: string | undefined;
    nock('https://93.184.215.14')
      .get('/list.json')
      .reply(function () {
        userAgent = this.req.headers['user-agent'];
        return [200, '[]'];
      });
    await fetchSourceList('https://93.184.215.14/list.json');
    expect(userAgent).to.equal('Portico-catalog-operator (source lists)');
  });
});
