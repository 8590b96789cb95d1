// What the artwork parser's workers do, and how they are asked: each operation takes and returns only what
// structured cloning carries (bytes as Uint8Array, URLs as strings, plain objects); refusals travel as their
// LogoError reason and message.
import { parentPort } from 'node:worker_threads';
import { LogoError } from './errors.js';
import { largestIconImage } from './ico.js';
import { iconLinks } from './icon-links.js';
import { sniffImageType } from './sniff.js';
import { inertSvg } from './svg.js';

export interface ParseRequest {
  id: number;
  op: string;
  args: unknown[];
}

export type ParseReply = { id: number; value: unknown } | { id: number; error: { reason?: string; message: string } };

/** What a worker says once its modules are loaded and it takes tasks: the deadline of its first task starts then. */
export interface ParseReady {
  ready: true;
}

/** A view of received bytes as a Buffer, without copying. */
export const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

export const PARSE_OPS = {
  sniff: (bytes: Uint8Array) => sniffImageType(asBuffer(bytes)),
  inertSvg: (bytes: Uint8Array): Uint8Array => inertSvg(asBuffer(bytes)),
  largestIcon: (bytes: Uint8Array) => largestIconImage(asBuffer(bytes)),
  iconSize: (bytes: Uint8Array) => {
    const { width, height } = largestIconImage(asBuffer(bytes));
    return { width, height };
  },
  iconLinks: (html: Uint8Array, pageUrl: string) => iconLinks(asBuffer(html).toString('latin1'), new URL(pageUrl)),
};

export type ParseOps = Record<string, (...args: never[]) => unknown>;

/** The worker's side: answers each request with the operation's value or the error it threw. */
export function serveParseOps(ops: ParseOps): void {
  const port = parentPort;
  if (port === null) throw new Error('serveParseOps runs in a worker thread');
  port.on('message', ({ id, op, args }: ParseRequest) => {
    let reply: ParseReply;
    try {
      const operation = ops[op];
      if (operation === undefined) throw new Error(`unknown parse operation ${op}`);
      reply = { id, value: operation(...(args as never[])) };
    } catch (error) {
      const { message } = error as Error;
      reply = {
        id,
        error: error instanceof LogoError ? { reason: error.reason, message } : { message: String(message) },
      };
    }
    port.postMessage(reply);
  });
  port.postMessage({ ready: true } satisfies ParseReady);
}
