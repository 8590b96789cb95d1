// A webhook receiver as small as a real one can be: it verifies every delivery's Standard Webhooks signature with
// the `standardwebhooks` package (the endpoint's whsec_ secret), answers 204, drops duplicates by webhook-id (a
// delivery may come more than once), and lets the caller wait for an event type.
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

/** Starts the receiver on 127.0.0.1; set `secret` before the first delivery. */
export async function startReceiver() {
  const events = [];
  const seen = new Set();
  const waiting = [];
  const receiver = { secret: undefined, events, url: '', close: () => new Promise((r) => server.close(r)) };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let event;
      try {
        event = new Webhook(receiver.secret.replace(/^whsec_/, '')).verify(body, req.headers);
      } catch (error) {
        console.error(`receiver: refused a delivery: ${error.message}`);
        res.writeHead(400).end();
        return;
      }
      res.writeHead(204).end();
      if (seen.has(req.headers['webhook-id'])) return;
      seen.add(req.headers['webhook-id']);
      events.push(event);
      for (const wait of [...waiting]) if (wait.type === event.type) wait.resolve(event);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${server.address().port}/portico-webhooks`;
  /** The first event of `type` (already received, or the next), or an error after `timeoutMs`. */
  receiver.waitFor = (type, timeoutMs = 15_000) => {
    const received = events.find((event) => event.type === type);
    if (received) return Promise.resolve(received);
    return new Promise((resolve, reject) => {
      const wait = { type, resolve: (event) => (clearTimeout(timer), resolve(event)) };
      const timer = setTimeout(() => reject(new Error(`no ${type} event within ${timeoutMs} ms`)), timeoutMs);
      waiting.push(wait);
    });
  };
  return receiver;
}
