import net from 'node:net';
import { Transform } from 'node:stream';

/**
 * A TCP proxy to a real server, started by a test, that can fail like a network does: `cut()`
 * resets every open connection and refuses new ones (a lost or restarted database), `restore()`
 * forwards again; `hold()` keeps every connection open and drops whatever is sent either way (a
 * server gone silent, a network dropping packets), for good. Listens on 127.0.0.1, on a free port.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  let down = false;
  let held = false;
  /** Forwards what passes through it, or drops it while the proxy holds. */
  const gate = () =>
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        done(null, held ? undefined : chunk);
      },
    });
  const server = net.createServer((client) => {
    if (down) return client.resetAndDestroy();
    const upstream = net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    const drop = () => {
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(gate()).pipe(upstream);
    upstream.pipe(gate()).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    /** Resets every connection through the proxy and refuses new ones. */
    cut() {
      down = true;
      for (const s of sockets) s.resetAndDestroy();
      sockets.clear();
    },
    restore() {
      down = false;
    },
    /** Keeps the connections (and accepts new ones) but forwards nothing from now on. */
    hold() {
      held = true;
    },
    async close() {
      this.cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
