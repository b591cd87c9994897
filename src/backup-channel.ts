import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { Logger } from 'pino';

import type { Db } from './db/db';
import { packBackup } from './db/embedded-backup';
import { CLI_ACTOR, type AuditEventInput } from './domain/audit/audit';

// How `admin backup` reaches a server that holds the embedded database (only one process may open
// its folder): a Unix domain socket in DATA_DIR, in a folder only the service's user may enter
// (0700), so only that user (who can read DATA_DIR anyway) can ask. Nothing listens on the network.
// The command sends one line of JSON, {"command":"backup","out":"<its file>"}; the server answers
// one line of JSON, {"ok":true} then the backup's bytes to the end of the connection, or
// {"ok":false,"message":"..."}. The command writes and checks the file (embedded-backup.ts).

/** The socket's place in DATA_DIR. */
export const backupSocketPath = (dataDir: string) => path.join(dataDir, 'run', 'admin.sock');

/** The longest request line read (the output file's name is the only variable part). */
const MAX_REQUEST = 8 * 1024;

/**
 * A backup reader that stops reading for this long is dropped: the database waits for the copy
 * to be read, and a stalled command must not hold every write of the service.
 */
const STALL_MS = 30_000;

/** The output file's name as recorded in the audit event (an operator's path, not a secret). */
const recordedName = (out: unknown) => (typeof out === 'string' && out.length > 0 ? out.slice(0, 500) : 'backup');

/** Reads one line (without its newline) from `socket`, leaving what follows it in the stream. */
function readLine(socket: net.Socket, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const done = (err: Error | null, line?: string) => {
      socket.off('data', onData).off('error', onError).off('end', onEnd);
      if (err) reject(err);
      else resolve(line!);
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const nl = buf.indexOf(10);
      if (nl >= 0) {
        socket.pause();
        const rest = buf.subarray(nl + 1);
        if (rest.length > 0) socket.unshift(rest);
        done(null, buf.subarray(0, nl).toString('utf8'));
      } else if (buf.length > max) done(new Error('request line too long'));
    };
    const onError = (err: Error) => done(err);
    const onEnd = () => done(new Error('connection closed before a whole line'));
    socket.on('data', onData).on('error', onError).on('end', onEnd);
  });
}

export type BackupChannel = { close(): Promise<void> };

/**
 * The server's end: listens on DATA_DIR/run/admin.sock while the server holds the embedded
 * database. Each backup is taken inside `db.whileIdle` (statements wait meanwhile) and recorded
 * as the audit event `database.backed_up` once sent.
 */
export async function startBackupChannel(
  deps: { db: Db; audit: { record(event: AuditEventInput): Promise<void> } },
  dataDir: string,
  logger: Logger,
): Promise<BackupChannel> {
  const { db } = deps;
  if (!db.whileIdle) throw new Error('The backup channel is for the embedded database.');
  const whileIdle = db.whileIdle;
  const socketPath = backupSocketPath(dataDir);
  fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o700 });
  fs.chmodSync(path.dirname(socketPath), 0o700);
  // A socket file left by a killed server: this process holds the database's lock, so no other
  // server listens there.
  fs.rmSync(socketPath, { force: true });
  const open = new Set<net.Socket>();

  const serve = async (socket: net.Socket) => {
    const request = JSON.parse(await readLine(socket, MAX_REQUEST)) as { command?: unknown; out?: unknown };
    if (request.command !== 'backup') {
      socket.end(`${JSON.stringify({ ok: false, message: 'Unknown request.' })}\n`);
      return;
    }
    let bytes = 0;
    socket.resume();
    await whileIdle(async () => {
      socket.write(`${JSON.stringify({ ok: true })}\n`);
      const pack = packBackup(dataDir);
      pack.on('data', (chunk: Buffer) => (bytes += chunk.length));
      await pipeline(pack, socket);
    });
    await deps.audit.record({
      companyId: null,
      action: 'database.backed_up',
      actor: CLI_ACTOR,
      target: { type: 'database', id: null, name: recordedName(request.out) },
      ip: null,
      requestId: null,
    });
    logger.info({ bytes }, 'database backup sent to the admin command');
  };

  const server = net.createServer((socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.setTimeout(STALL_MS, () => socket.destroy(new Error('the backup reader stalled')));
    serve(socket).catch((err: unknown) => {
      logger.warn({ err: { message: (err as Error).message } }, 'database backup not sent');
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  fs.chmodSync(socketPath, 0o600);
  // Like the database's thread, the channel does not keep the process alive on its own.
  server.unref();
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The server answered the request with a refusal, or there is no server to ask. */
export class BackupChannelError extends Error {}

/**
 * The command's end: asks the server holding DATA_DIR's database for a backup; resolves with the
 * stream of its bytes once the server has begun to send them.
 */
export async function requestBackup(dataDir: string, out: string): Promise<Readable> {
  const socketPath = backupSocketPath(dataDir);
  const socket = net.connect(socketPath);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
  } catch (err) {
    socket.destroy();
    throw new BackupChannelError(
      `The embedded database in ${dataDir} is in use, and no server answers on ${socketPath} (${(err as NodeJS.ErrnoException).code ?? 'error'}). ` +
        'Is it an older version, or another command? Stop it, or wait for it, and run the backup again.',
    );
  }
  socket.write(`${JSON.stringify({ command: 'backup', out })}\n`);
  const answer = JSON.parse(await readLine(socket, MAX_REQUEST)) as { ok?: boolean; message?: string };
  if (!answer.ok) {
    socket.destroy();
    throw new BackupChannelError(`The server refused the backup: ${answer.message ?? 'no reason given'}`);
  }
  // Paused, with the bytes after the answer's line put back: the caller's pipeline reads them all.
  return socket;
}
