// A real S3 protocol server for the tests: tools/s3d (gofakes3, in memory), built into the tool cache like the
// embedded database, started by the first test that asks for it and stopped with the other test services.
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { buildGoTool, startGoTool, stopChild, type GoTool } from '#core/infra/go-tool.js';
import { testToolCache } from './machine.js';

const S3D: GoTool = {
  source: 's3d',
  binary: 'portico-s3d',
  label: 'the test S3 server',
  buildNote: 'the first build downloads gofakes3 and takes a minute',
  fallback: 'The S3 object-storage tests need Go 1.24+.',
};

let server: Promise<{ endpoint: string; child: ChildProcessWithoutNullStreams }> | undefined;

/** The endpoint (`http://127.0.0.1:<port>`) of the run's S3 server, started on first use. */
export async function testS3Endpoint(): Promise<string> {
  server ??= launch();
  return (await server).endpoint;
}

/** A new, empty bucket on the run's S3 server: no test sees another's objects. */
export async function testS3Bucket(): Promise<{ endpoint: string; bucket: string }> {
  const endpoint = await testS3Endpoint();
  const bucket = `test-${randomBytes(8).toString('hex')}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
  return { endpoint, bucket };
}

export async function stopTestS3(): Promise<void> {
  const running = await server?.catch(() => undefined);
  server = undefined;
  if (running) await stopChild(running.child);
}

async function launch(): Promise<{ endpoint: string; child: ChildProcessWithoutNullStreams }> {
  // The drivers take credentials from the SDK's default chain; give it some (the server does not check
  // them) so that it never goes looking further, e.g. at an instance metadata service off this machine.
  process.env.AWS_ACCESS_KEY_ID ??= 'portico-test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'portico-test-secret';
  const binary = await buildGoTool(S3D, testToolCache());
  const { child, ready } = await startGoTool(binary, ['-listen', '127.0.0.1:0', '-exit-on-stdin-eof'], S3D.label);
  return { endpoint: ready, child };
}
