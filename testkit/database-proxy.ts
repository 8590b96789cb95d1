// A loopback TCP proxy in front of the test database that can hold back what clients send: the server then
// looks stalled to them (no reply comes, their deadline passes), and what was held reaches it only when
// released, after the client gave up on it: a write that lands late.
import { connect, createServer, type Socket } from 'node:net';

export interface DatabaseProxy {
  /** mongodb://127.0.0.1:<port>/ */
  readonly url: string;
  /**
   * From now on, holds back each connection's traffic to the server from its first chunk that `from`
   * accepts (any chunk by default) onwards.
   */
  hold(from?: (chunk: Buffer) => boolean): void;
  /**
   * Sends everything held on to the server, and forwards again; resolves once the server has answered what
   * was held (for a client that hung up meanwhile: once the server, done with it, closed the connection).
   */
  release(): Promise<void>;
  close(): Promise<void>;
}

interface Link {
  outbound: Socket;
  held: Buffer[] | undefined;
  closed: boolean;
}

/** A chunk carrying the command named `name` (its BSON key). */
export const command = (name: string) => (chunk: Buffer) => chunk.includes(Buffer.from(`${name}\0`));

export async function startDatabaseProxy(target: string): Promise<DatabaseProxy> {
  const { hostname, port } = new URL(target);
  const links = new Set<Link>();
  let holding: ((chunk: Buffer) => boolean) | undefined;
  const server = createServer((inbound) => {
    const link: Link = { outbound: connect(Number(port), hostname), held: undefined, closed: false };
    links.add(link);
    inbound.on('data', (chunk: Buffer) => {
      if (!link.held && holding?.(chunk)) link.held = [];
      if (link.held) link.held.push(chunk);
      else link.outbound.write(chunk);
    });
    link.outbound.on('data', (chunk: Buffer) => inbound.writable && inbound.write(chunk));
    // What the client sent and was held still goes to the server after the client hung up.
    inbound.on('close', () => {
      link.closed = true;
      if (!link.held) finish(link);
    });
    inbound.on('error', () => {});
    link.outbound.on('error', () => inbound.destroy());
    link.outbound.on('close', () => inbound.destroy());
  });
  const finish = (link: Link) => {
    link.outbound.end();
    links.delete(link);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `mongodb://127.0.0.1:${(server.address() as { port: number }).port}/`,
    hold(from = () => true) {
      holding = from;
    },
    async release() {
      holding = undefined;
      const answered: Promise<void>[] = [];
      for (const link of links) {
        if (!link.held) continue;
        answered.push(
          new Promise<void>((resolve) => {
            link.outbound.once('close', () => resolve());
            if (!link.closed) link.outbound.once('data', () => resolve());
          }),
        );
        for (const chunk of link.held) link.outbound.write(chunk);
        link.held = undefined;
        if (link.closed) finish(link);
      }
      await Promise.all(answered);
    },
    async close() {
      for (const link of links) link.outbound.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
