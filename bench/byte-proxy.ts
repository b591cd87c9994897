/**
 * A TCP proxy that counts the bytes it forwards, for bench/capacity.ts: `node --import tsx
 * bench/byte-proxy.ts <target-port>` listens on a free port of 127.0.0.1, forwards to
 * 127.0.0.1:<target-port>, sends `{port}` to its parent over IPC once listening, and answers each
 * `'counts'` message with `{up, down, connections}` (bytes client → target, target → client, and
 * connections accepted so far). A process of its own, so that its CPU time is neither the measured
 * server's nor the load generator's.
 */
import net from 'node:net';

const targetPort = Number(process.argv[2]);
if (!Number.isInteger(targetPort) || !process.send) {
  console.error('usage: spawned with an IPC channel, argument: the target port on 127.0.0.1');
  process.exit(2);
}

const counts = { up: 0, down: 0, connections: 0 };
// No Nagle on either side, as the driver and the HTTP server have none: a small message held back
// for the peer's delayed acknowledgement stalled a connection that waits for each answer (one
// batch of plate searches at a time) by tens of milliseconds.
const server = net.createServer({ noDelay: true }, (client) => {
  counts.connections++;
  const upstream = net.connect({ port: targetPort, host: '127.0.0.1', noDelay: true });
  const drop = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', drop).on('close', drop);
  upstream.on('error', drop).on('close', drop);
  // Counted as they pass, not from socket.bytesRead at close: pooled connections stay open.
  client.on('data', (d: Buffer) => (counts.up += d.length));
  upstream.on('data', (d: Buffer) => (counts.down += d.length));
  client.pipe(upstream);
  upstream.pipe(client);
});
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as net.AddressInfo).port }));
process.on('message', (m) => {
  if (m === 'counts') process.send!({ ...counts });
});
// The parent gone (its IPC channel closed): nothing left to count for.
process.on('disconnect', () => process.exit(0));
