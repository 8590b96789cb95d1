// The node:http server both main.ts and the tests run: its request-head limit, and the requests node:http
// refuses before any handler sees them (a head over that limit, a request it cannot parse), answered as
// problem details like every other refusal instead of Node's bare status line.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, problemOf } from './errors.js';

/**
 * Request line and headers: room for the longest URL the API takes, a `next` link with a cursor of the
 * gateway's 16 KiB maximum (Node's default limit, 16 KiB in all, could not carry it), beside the usual headers.
 */
export const MAX_HEADER_BYTES = 32 * 1024;

export function createApiServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, handler);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // What node:http itself does: write only on a socket that can take it and has no response under way.
    const busy = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (error.code === 'ECONNRESET' || !socket.writable || busy) {
      socket.destroy();
      return;
    }
    if (error.code === 'HPE_REQUEST_TIMEOUT') {
      socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
      return;
    }
    const problem =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? new AppError(
            'REQUEST_HEADER_FIELDS_TOO_LARGE',
            `The request line and headers exceed ${MAX_HEADER_BYTES / 1024} KiB.`,
          )
        : new AppError('BAD_REQUEST', 'The request is not well-formed HTTP/1.1.');
    const body = JSON.stringify(problemOf(problem, '/'));
    socket.end(
      `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}
