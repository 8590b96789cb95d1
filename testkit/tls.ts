// Certificates for loopback HTTPS servers that stand in for public hosts, made once per run with the openssl
// command line: a test CA, a serving certificate it signs for `*.fhir.test` (and 127.0.0.1), and a
// self-signed certificate for the same names that nobody trusts (a TLS failure).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestTls {
  ca: string;
  key: string;
  cert: string;
  untrusted: { key: string; cert: string };
}

let made: TestTls | undefined;

export function testTls(): TestTls {
  if (made) return made;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portico-test-tls-'));
  const at = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
    openssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      at('ca.key'),
      '-out',
      at('ca.crt'),
      '-days',
      '7',
      '-subj',
      '/CN=Portico test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
    );
    openssl('req', ...ec, '-keyout', at('server.key'), '-out', at('server.csr'), '-subj', '/CN=fhir.test');
    writeFileSync(
      at('server.ext'),
      'subjectAltName=DNS:*.fhir.test,DNS:fhir.test,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n',
    );
    openssl(
      'x509',
      '-req',
      '-in',
      at('server.csr'),
      '-CA',
      at('ca.crt'),
      '-CAkey',
      at('ca.key'),
      '-CAcreateserial',
      '-out',
      at('server.crt'),
      '-days',
      '7',
      '-extfile',
      at('server.ext'),
    );
    openssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      at('untrusted.key'),
      '-out',
      at('untrusted.crt'),
      '-days',
      '7',
      '-subj',
      '/CN=fhir.test',
      '-addext',
      'subjectAltName=DNS:*.fhir.test,DNS:fhir.test',
    );
    const read = (name: string) => readFileSync(at(name), 'utf8');
    made = {
      ca: read('ca.crt'),
      key: read('server.key'),
      cert: read('server.crt'),
      untrusted: { key: read('untrusted.key'), cert: read('untrusted.crt') },
    };
    return made;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
