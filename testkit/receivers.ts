// Webhook receivers for tests: real HTTP servers on loopback that record what arrives and answer as a test
// tells them (a status, a Retry-After, a delay, an answer held, a request left hanging), and verification of
// deliveries with the public `standardwebhooks` library, as a customer's receiver would do it.
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { until } from './until.js';

export interface Received {
  /** The request path: tests give each endpoint a path of its own on a shared receiver. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Parsed body. */
  payload: { id: string; type: string; timestamp: string; customerAccountId: string; data: Record<string, unknown> };
  receivedAt: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Answer after this long. */
  delayMs?: number;
  /** Answer once this settles: the test holds the answer while it does something else. */
  after?: Promise<unknown>;
  /** Never answer (until the receiver closes). */
  hang?: boolean;
}

export class Receiver {
  readonly received: Received[] = [];
  /** Requests being answered now, and the most at once. */
  open = 0;
  maxOpen = 0;
  private answer: (request: Received, index: number) => Answer = () => ({ status: 204 });
  private readonly hanging = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<Receiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new Receiver(server, (server.address() as AddressInfo).port);
    server.on('request', (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () =>
        receiver.handle(
          { path: req.url ?? '/', headers: req.headers, body, payload: safeParse(body), receivedAt: Date.now() },
          res,
        ),
      );
    });
    return receiver;
  }

  url(path = '/hooks'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** How to answer every request from now on (`index`: its position among all received). */
  answerWith(answer: Answer | ((request: Received, index: number) => Answer)): void {
    this.answer = typeof answer === 'function' ? answer : () => answer;
  }

  /** Resolves once `count` requests (in all) have arrived; rejects after `ms`. */
  async waitFor(count: number, ms?: number): Promise<Received[]> {
    await until(`${count} deliveries`, () => this.received.length >= count, {
      timeoutMs: ms,
      diagnose: () => `got ${this.received.length}`,
    });
    return this.received;
  }

  /** The deliveries of one event (by webhook-id). */
  of(eventId: string): Received[] {
    return this.received.filter((r) => r.headers['webhook-id'] === eventId);
  }

  /** The deliveries to one path. */
  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Resolves once `count` requests have arrived at `path`. */
  async waitAt(path: string, count: number, ms?: number): Promise<Received[]> {
    await until(`${count} deliveries at ${path}`, () => this.at(path).length >= count, {
      timeoutMs: ms,
      diagnose: () => `got ${this.at(path).length}`,
    });
    return this.at(path);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private handle(request: Received, res: ServerResponse): void {
    const index = this.received.length;
    this.received.push(request);
    const answer = this.answer(request, index);
    this.open++;
    this.maxOpen = Math.max(this.maxOpen, this.open);
    res.on('close', () => this.open--);
    if (answer.hang) {
      this.hanging.add(res);
      return;
    }
    const send = () => res.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? '');
    const respond = () => (answer.delayMs ? setTimeout(send, answer.delayMs) : send());
    if (answer.after) void answer.after.then(respond, respond);
    else respond();
  }
}

function safeParse(body: string): Received['payload'] {
  try {
    return JSON.parse(body) as Received['payload'];
  } catch {
    return { id: '', type: '', timestamp: '', customerAccountId: '', data: {} };
  }
}

/**
 * Verifies a delivery as a receiver using the public standardwebhooks library would, with the receiver's
 * clock at `nowMs` (default: the real time). Throws when it does not verify.
 */
export function verifyDelivery(secret: string, delivery: Received, nowMs?: number): unknown {
  const headers = {
    'webhook-id': String(delivery.headers['webhook-id']),
    'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
    'webhook-signature': String(delivery.headers['webhook-signature']),
  };
  const realNow = Date.now;
  if (nowMs !== undefined) Date.now = () => nowMs;
  try {
    return new Webhook(secret).verify(delivery.body, headers);
  } finally {
    Date.now = realNow;
  }
}
