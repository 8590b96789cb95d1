// The one outbound policy: which addresses count as public, and agents that refuse everything else at
// connect time, after DNS (real loopback servers stand in for the internal services an attacker aims at).
import { expect } from 'chai';
import type { LookupAddress } from 'node:dns';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import nock from 'nock';
import { isPublicAddress, PublicHttpsAgent, publicOnlyLookup, RefusedAddressError } from '#core/net/address-policy.js';
import { NOT_PUBLIC, PUBLIC } from '../../../testkit/addresses.js';

/** A fake DNS: name → addresses, in the shape dns.lookup answers with `all: true`. */
function fakeDns(table: Record<string, string[]>) {
  return ((
    hostname: string,
    _options: unknown,
    callback: (error: Error | null, addresses: LookupAddress[]) => void,
  ) => {
    const addresses = table[hostname];
    if (!addresses)
      return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  }) as unknown as typeof import('node:dns').lookup;
}

describe('core: outbound address policy', () => {
  describe('isPublicAddress', () => {
    for (const address of PUBLIC) {
      it(`admits the public address ${address}`, () => expect(isPublicAddress(address)).to.equal(true));
    }
    for (const [range, addresses] of NOT_PUBLIC) {
      it(`refuses ${range}: ${addresses.join(', ')}`, () => {
        for (const address of addresses) expect(isPublicAddress(address), address).to.equal(false);
      });
    }
    it('refuses what is not an address', () => {
      for (const text of ['', 'example.com', 'localhost', '::ffff:999.0.0.1', '1.2.3.4.5'])
        expect(isPublicAddress(text), text).to.equal(false);
    });
  });

  describe('publicOnlyLookup', () => {
    const lookup = publicOnlyLookup(
      fakeDns({
        'public.test': ['93.184.215.14', '2606:4700:4700::1111'],
        'mixed.test': ['93.184.215.14', '10.0.0.7'],
        'rebound.test': ['127.0.0.1'],
      }),
    );
    const ask = (host: string, all: boolean) =>
      new Promise<{ error: Error | null; result: unknown }>((resolve) =>
        lookup(host, { all }, (error, address, family) =>
          resolve({ error, result: all ? address : { address, family } }),
        ),
      );

    it('answers like dns.lookup for a name whose every address is public', async () => {
      expect((await ask('public.test', false)).result).to.deep.equal({ address: '93.184.215.14', family: 4 });
      expect((await ask('public.test', true)).result).to.deep.equal([
        { address: '93.184.215.14', family: 4 },
        { address: '2606:4700:4700::1111', family: 6 },
      ]);
    });

    it('refuses a name with any address outside the policy, and passes DNS errors on', async () => {
      for (const host of ['mixed.test', 'rebound.test']) {
        const { error } = await ask(host, true);
        expect(error, host).to.be.instanceOf(RefusedAddressError);
      }
      expect((await ask('nothing.test', false)).error).to.have.property('code', 'ENOTFOUND');
    });
  });

  describe('PublicHttpsAgent', () => {
    let server: net.Server;
    let port: number;
    let connections = 0;
    before(async () => {
      // The agent's own sockets, as production makes them: nock's interception would stand in between.
      nock.restore();
      // A plain TCP listener stands in for an internal service: a refused request never reaches the TLS stage.
      server = net.createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    after(async () => {
      nock.activate();
      await new Promise((resolve) => server.close(resolve));
    });

    const get = (host: string, agent: https.Agent) =>
      new Promise<unknown>((resolve) => {
        https.get({ host, port, path: '/', agent }, (response) => resolve(response.statusCode)).on('error', resolve);
      });

    it('refuses IP literals outside the policy without connecting', async () => {
      const agent = new PublicHttpsAgent();
      for (const host of ['127.0.0.1', '::ffff:127.0.0.1', '0.0.0.0', '::7f00:1']) {
        const before = connections;
        expect(await get(host, agent), host).to.be.instanceOf(RefusedAddressError);
        expect(connections, host).to.equal(before);
      }
    });

    it('refuses a name that resolves to loopback (DNS rebinding) without connecting', async () => {
      const agent = new PublicHttpsAgent({}, fakeDns({ 'rebound.test': ['127.0.0.1'] }));
      const before = connections;
      const error = await get('rebound.test', agent);
      expect(error).to.be.instanceOf(RefusedAddressError).and.have.property('address', '127.0.0.1');
      expect(connections).to.equal(before);
    });

    it('admits the exact addresses a test names (a loopback stub standing in for public hosts), and nothing else', async () => {
      const agent = new PublicHttpsAgent(
        {},
        fakeDns({ 'stub.test': ['127.0.0.1'], 'other.test': ['127.0.0.2'] }),
        new Set(['127.0.0.1']),
      );
      for (const host of ['stub.test', '127.0.0.1']) {
        const before = connections;
        expect(await get(host, agent), host).to.not.be.instanceOf(RefusedAddressError); // the listener hangs up: not TLS
        expect(connections, host).to.equal(before + 1);
      }
      for (const host of ['other.test', '127.0.0.2', '::1']) {
        const before = connections;
        expect(await get(host, agent), host).to.be.instanceOf(RefusedAddressError);
        expect(connections, host).to.equal(before);
      }
    });

    it('would connect where a plain agent does: the same listener is reached through one', async () => {
      const before = connections;
      expect(await get('127.0.0.1', new https.Agent())).to.be.instanceOf(Error); // the listener hangs up: not TLS
      expect(connections).to.equal(before + 1);
    });
  });
});
