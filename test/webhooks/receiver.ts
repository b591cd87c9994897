import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Received = { headers: http.IncomingHttpHeaders; body: string; at: number };

/**
 * A real HTTP receiver for webhook tests, on 127.0.0.1 and a free port. `answer` decides each
 * response from the number of the request (1-based): a status code, or 'hang' to never answer.
 */
export async function startReceiver(answer: (n: number) => number | 'hang' = () => 200) {
  const received: Received[] = [];
  const hanging = new Set<http.ServerResponse>();
  let waiters: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      received.push({ headers: req.headers, body, at: Date.now() });
      for (const w of waiters) w();
      waiters = [];
      const a = answer(received.length);
      if (a === 'hang') hanging.add(res);
      else res.writeHead(a, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    /** Resolves once `n` requests have arrived (or rejects after `timeoutMs`). */
    async waitFor(n: number, timeoutMs = 30_000): Promise<Received[]> {
      const end = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > end) throw new Error(`expected ${n} webhook requests, got ${received.length}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
      return received;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What a receiver does with the recipe of docs/operations.md: recompute the HMAC of "<t>.<body>" and compare. */
export function verifySignature(secret: string, header: string | undefined, body: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/u.exec(header ?? '');
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2]!, 'hex'));
}
