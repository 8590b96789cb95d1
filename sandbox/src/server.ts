// The sandbox EHR: an OAuth 2 authorization server (SMART App Launch 2.2, standalone patient launch) and a FHIR
// R4 server with synthetic patients, in one process on loopback. `npm start` runs it so a newcomer can click
// through a whole connection offline; Portico's tests and benchmarks run it with failure switches.
//
// Why built here rather than run as a real FHIR server (HAPI, Medplum): it is small (Koa and a few hundred lines),
// needs no database or container (the store is in memory and the observations are generated on demand), and it
// is strict exactly where Portico must be proven right: PKCE S256 only, exact redirect URIs and aud, client
// authentication as registered, single-use codes, refresh rotation with reuse detection, patient-bound tokens.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { DEMO_BRANDS, DEMO_PATIENTS } from './data.js';
import { ObservationStore } from './fhir/observation-store.js';
import { RecordStore } from './fhir/record-store.js';
import { dateFromClock } from './http.js';
import { Grants } from './oauth/grants.js';
import { sandboxRouter } from './routes.js';
import { createStats } from './stats.js';
import { SandboxSwitches } from './switches.js';
import type { SandboxEhr, SandboxOptions } from './types.js';
import { fhirBase, type World } from './world.js';

export type * from './types.js';
export { SandboxSwitches } from './switches.js';
export type { SandboxStats } from './stats.js';
export { DEMO_BRANDS, DEMO_CLIENT_ID, DEMO_PATIENTS } from './data.js';

export async function startSandboxEhr(options: SandboxOptions): Promise<SandboxEhr> {
  const now = options.now ?? Date.now;
  const brands = options.brands ?? DEMO_BRANDS;
  const patients = options.patients ?? DEMO_PATIENTS;
  const switches = new SandboxSwitches();
  const grants = new Grants(now);
  switches.onExpireAccessTokens(() => grants.expireAccessTokens());
  const world: World = {
    origin: '',
    brands,
    clients: options.clients,
    patients,
    accessTokenTtlSeconds: options.accessTokenTtlSeconds ?? 3600,
    now,
    grants,
    observations: new ObservationStore(
      brands.map((brand) => brand.key),
      patients,
    ),
    records: new RecordStore(
      brands.map((brand) => brand.key),
      patients,
    ),
    switches,
    stats: createStats(),
  };

  const app = new Koa();
  const router = sandboxRouter(world);
  app.use(dateFromClock(now)).use(router.routes()).use(router.allowedMethods());
  const callback = app.callback();
  const server = createServer((req, res) => void callback(req, res));
  world.origin = await listen(server, options.host ?? '127.0.0.1', options.port ?? 0);

  return {
    origin: world.origin,
    fhirBaseUrl: (brandKey) => fhirBase(world, brandKey),
    switches,
    stats: world.stats,
    addObservations: (brandKey, patientId, count) => world.observations.add(brandKey, patientId, count, now()),
    touchObservation: (brandKey, patientId, index) => world.observations.touch(brandKey, patientId, index, now()),
    touchRecord: (brandKey, type, id) => world.records.touch(brandKey, type, id, now()),
    removeRecord: (brandKey, type, id) => world.records.remove(brandKey, type, id),
    close: async () => {
      switches.close();
      const closed = new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
      // Hanging and held requests, and idle keep-alive sockets, would otherwise keep close() waiting forever.
      server.closeAllConnections();
      await closed;
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve(`http://${shownHost}:${address.port}`);
    });
  });
}
