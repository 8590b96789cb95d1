// Runs the sandbox EHR on its own with the demo brands, patients and public client, and says where it is.
import { readSandboxConfig } from './config.js';
import { DEMO_RECORDS } from './data.js';
import { DEMO_BRANDS, DEMO_CLIENT_ID, DEMO_PATIENTS, startSandboxEhr } from './server.js';

const config = readSandboxConfig();
const ehr = await startSandboxEhr({
  host: config.host,
  port: config.port,
  // Its name is what the sign-in page shows the patient: the client is Portico, signing in for the app.
  clients: [
    {
      clientId: DEMO_CLIENT_ID,
      name: 'Portico Connect',
      redirectUris: [...config.redirectUris],
      auth: { method: 'none' },
    },
  ],
  // Whole synthetic records: every type, notes and reports as attachments.
  patients: DEMO_PATIENTS.map((p) => ({ ...p, observations: 0, record: DEMO_RECORDS[p.id] })),
});
console.log(`Sandbox EHR listening on ${ehr.origin}`);
for (const brand of DEMO_BRANDS) console.log(`  ${brand.name}: ${ehr.fhirBaseUrl(brand.key)}`);
console.log(`  Sign in as ${DEMO_PATIENTS.map((p) => `${p.username} / ${p.password}`).join(', ')}`);

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    void ehr.close().then(() => process.exit(0));
  });
