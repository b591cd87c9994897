import path from 'node:path';
import { pipeline } from 'node:stream/promises';

import { BackupChannelError, requestBackup } from './backup-channel';
import type { Config } from './config';
import { DatabaseLockedError, type Db } from './db/db';
import {
  hasEmbeddedDatabase,
  NotABackupError,
  packBackup,
  PGDATA,
  restoreBackup,
  RestoreRefusedError,
  writeBackupFile,
} from './db/embedded-backup';
import { createRepositories } from './db/repositories';
import { CLI_ACTOR, type AuditAction } from './domain/audit/audit';
import { StartupError } from './secrets';
import { openPreparedDatabase } from './startup';

// `admin backup` and `admin restore` (DECISIONS, "Backups of the embedded database"). They work on
// DATA_DIR's files, not through the service's objects: main-admin.ts runs them before (instead
// of) opening the database as its other commands do.

/** A backup or restore that cannot be done as asked; the message says why and what to do. */
export class BackupCommandError extends Error {}

const POSTGRES_TOOLS =
  'With DATABASE_URL the database is PostgreSQL: back it up with its own tools, pg_dump (a logical copy) or ' +
  'base backups with WAL archiving (pg_basebackup and archive_command, for point-in-time recovery), and restore with theirs.';

const record = (db: Db, action: AuditAction, file: string) =>
  createRepositories(db).audit.record({
    companyId: null,
    action,
    actor: CLI_ACTOR,
    target: { type: 'database', id: null, name: file },
    ip: null,
    requestId: null,
  });

export type BackupOutcome = { file: string; bytes: number; takenBy: 'server' | 'command' };

/**
 * Writes a backup of the embedded database to `out`. A stopped database is opened here (its lock
 * taken) and copied while idle; one held by a running server is copied by that server, asked
 * through its channel (backup-channel.ts), which records the event; here the event is ours.
 */
export async function backupCommand(config: Config, out: string): Promise<BackupOutcome> {
  if (config.databaseUrl) throw new BackupCommandError(`admin backup copies the embedded database. ${POSTGRES_TOOLS}`);
  const file = path.resolve(out);
  if (!hasEmbeddedDatabase(config.dataDir)) {
    throw new BackupCommandError(`There is no embedded database in ${path.join(config.dataDir, PGDATA)} to back up (DATA_DIR).`);
  }
  let db: Db;
  try {
    ({ db } = await openPreparedDatabase(config));
  } catch (err) {
    if (!(err instanceof DatabaseLockedError)) throw err;
    // A running server holds the folder: it takes the copy.
    const bytes = await writeBackupFile(file, async (dest) => pipeline(await requestBackup(config.dataDir, file), dest));
    return { file, bytes, takenBy: 'server' };
  }
  try {
    const bytes = await writeBackupFile(file, (dest) => db.whileIdle!(() => pipeline(packBackup(config.dataDir), dest)));
    await record(db, 'database.backed_up', file);
    return { file, bytes, takenBy: 'command' };
  } finally {
    await db.close();
  }
}

export type RestoreOutcome = { dataDir: string; from: string; createdAt: string; movedAside: string | null };

/**
 * Brings a backup back into DATA_DIR (the server stopped; `force` moves a database already there
 * aside). The unpacked copy is opened first as the server would open it (migrated, its document
 * key checked), and the restore is recorded in it.
 */
export async function restoreCommand(config: Config, from: string, force: boolean): Promise<RestoreOutcome> {
  if (config.databaseUrl) throw new BackupCommandError(`admin restore brings back the embedded database. ${POSTGRES_TOOLS}`);
  const file = path.resolve(from);
  try {
    const r = await restoreBackup({
      dataDir: config.dataDir,
      from: file,
      force,
      prepare: async (unpacked) => {
        const { db } = await openPreparedDatabase({ ...config, dataDir: unpacked });
        try {
          await record(db, 'database.restored', file);
        } finally {
          await db.close();
        }
      },
    });
    return { dataDir: config.dataDir, from: file, createdAt: r.createdAt, movedAside: r.movedAside };
  } catch (err) {
    if (err instanceof DatabaseLockedError) {
      throw new BackupCommandError(
        `The embedded database in ${path.join(config.dataDir, PGDATA)} is in use (a running server?). Stop it first: restore replaces the database's files.`,
      );
    }
    if (err instanceof StartupError) throw new BackupCommandError(`The backup cannot be used with this configuration: ${err.message}`);
    throw err;
  }
}

/** The errors of these commands whose message is the whole story (no "Failed:" prefix, no stack). */
export const isBackupCommandError = (err: unknown): err is Error =>
  err instanceof BackupCommandError ||
  err instanceof NotABackupError ||
  err instanceof RestoreRefusedError ||
  err instanceof BackupChannelError;
