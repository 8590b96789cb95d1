// A Koa app as a node:http request listener: Koa's callback returns a promise (settled by Koa itself, errors
// included), which node:http would ignore; the listener says so explicitly.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Koa from 'koa';

export function koaListener(app: Koa): (req: IncomingMessage, res: ServerResponse) => void {
  const callback = app.callback();
  return (req, res) => void callback(req, res);
}
