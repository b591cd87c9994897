import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable, type Writable } from 'node:stream';

import * as tar from 'tar';

import { LOCK_FILES, lockDataDir } from './db';

// A backup of the embedded database (DECISIONS, "Backups of the embedded database"): a gzipped tar
// of DATA_DIR's database folder (`pgdata/`), taken while the database is idle after a CHECKPOINT
// (Db.whileIdle), with the keys the service generated into DATA_DIR (`*.key`: without the
// identity documents' key a restored database matches no one) and, first, a small manifest that
// tells our backups from any other file. Streamed from the files to the output (no copy in memory);
// PGlite's own dumpDataDir() would build the whole tarball in memory twice over.

/** The manifest's name: the archive's first entry. */
export const BACKUP_MANIFEST = 'claims-registry-backup.json';
const FORMAT = 'claims-registry embedded database backup';
const FORMAT_VERSION = 1;

/** The database's folder inside DATA_DIR. */
export const PGDATA = 'pgdata';

/** Files of a running PostgreSQL that are no part of its data (as pg_basebackup leaves them out), and our lock's. */
const NOT_DATA = new Set([LOCK_FILES.lock, LOCK_FILES.pid, 'postmaster.pid', 'postmaster.opts']);

/** The secrets generated into DATA_DIR (src/secrets.ts): top-level `*.key` files. */
const isKeyFile = (name: string) => /^[A-Za-z0-9_-][A-Za-z0-9_.-]*\.key$/u.test(name);

type Manifest = { format: string; version: number; created_at: string; postgres: string; keys: string[] };

/** A file given to `restore` that is not one of our backups, or not whole; the message says which. */
export class NotABackupError extends Error {}

/** A restore that would replace something without `--force`; the message says what. */
export class RestoreRefusedError extends Error {}

const keyFilesOf = (dataDir: string): string[] =>
  fs
    .readdirSync(dataDir, { withFileTypes: true })
    .filter((e) => e.isFile() && isKeyFile(e.name))
    .map((e) => e.name)
    .sort();

/** Whether DATA_DIR holds an embedded database (its folder with PG_VERSION). */
export const hasEmbeddedDatabase = (dataDir: string): boolean => fs.existsSync(path.join(dataDir, PGDATA, 'PG_VERSION'));

/**
 * The backup of DATA_DIR as a stream of gzipped tar. Call it only inside `db.whileIdle` and read
 * it to its end there: the files must not change while they are read.
 */
export function packBackup(dataDir: string, now: Date = new Date()): Readable {
  const keys = keyFilesOf(dataDir);
  const manifest: Manifest = {
    format: FORMAT,
    version: FORMAT_VERSION,
    created_at: now.toISOString(),
    postgres: fs.readFileSync(path.join(dataDir, PGDATA, 'PG_VERSION'), 'utf8').trim(),
    keys,
  };
  // tar packs files: the manifest is written beside the database for as long as the backup is read.
  const manifestFile = path.join(dataDir, BACKUP_MANIFEST);
  fs.writeFileSync(manifestFile, `${JSON.stringify(manifest)}\n`, { mode: 0o600 });
  const pack = tar.create(
    {
      gzip: true,
      cwd: dataDir,
      portable: true,
      // Files are read a MiB at a time (node-tar's default is 16), a few entries ahead at most.
      maxReadSize: 1024 * 1024,
      // pgdata's lock and pid files, and what is under them, stay out.
      filter: (p) => {
        const [top, name] = p.split('/');
        return !(top === PGDATA && name !== undefined && NOT_DATA.has(name));
      },
    },
    [BACKUP_MANIFEST, PGDATA, ...keys],
  );
  const stream = Readable.from(pack);
  stream.once('close', () => fs.rmSync(manifestFile, { force: true }));
  return stream;
}

/**
 * Writes a backup to `out` atomically: `write` fills a temporary file beside it, which is read
 * back whole (gzip's checksum, the manifest first, the database's version file) before it takes
 * the final name; nothing is left under `out` otherwise. Returns its size in bytes.
 */
export async function writeBackupFile(out: string, write: (dest: Writable) => Promise<void>): Promise<number> {
  const temp = path.join(path.dirname(out), `.${path.basename(out)}.partial-${randomBytes(6).toString('hex')}`);
  try {
    await write(fs.createWriteStream(temp, { flags: 'wx', mode: 0o600, flush: true }));
    await checkBackup(temp);
    fs.renameSync(temp, out);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw err;
  }
  // The new name durable too.
  const dir = fs.openSync(path.dirname(out), 'r');
  try {
    fs.fsyncSync(dir);
  } finally {
    fs.closeSync(dir);
  }
  return fs.statSync(out).size;
}

/** Reads a backup through: whole (gzip's end and checksum), our manifest first, a database inside. */
async function checkBackup(file: string): Promise<void> {
  const seen: string[] = [];
  try {
    await tar.list({ file, strict: true, onReadEntry: (entry) => void seen.push(entry.path) });
  } catch (err) {
    throw new NotABackupError(`${file} is not a whole backup: ${(err as Error).message}`);
  }
  if (seen[0] !== BACKUP_MANIFEST || !seen.includes(`${PGDATA}/PG_VERSION`)) {
    throw new NotABackupError(`${file} is not a backup of the claims registry's embedded database.`);
  }
}

/** What an archive entry may be: our manifest, the database's folder and files, a key file beside it. */
function allowedEntry(p: string, type: string): boolean {
  const clean = p.replace(/\/$/u, '');
  if (type !== 'File' && type !== 'Directory') return false;
  if (clean === BACKUP_MANIFEST || isKeyFile(clean)) return type === 'File';
  return (clean === PGDATA || clean.startsWith(`${PGDATA}/`)) && !clean.split('/').includes('..');
}

/**
 * Unpacks `from` into the new folder `into` (DATA_DIR's layout: the manifest, `pgdata/`, the key
 * files) and checks it is one of our backups; only the entries of such a backup are written.
 */
async function unpackBackup(from: string, into: string): Promise<Manifest> {
  let first = true;
  let ours = true;
  try {
    await tar.extract({
      file: from,
      cwd: into,
      strict: true,
      filter: (p, entry) => {
        // The manifest comes first; an archive that opens with anything else is not ours, and
        // nothing of it is written.
        if (first) ours = p === BACKUP_MANIFEST;
        first = false;
        return ours && allowedEntry(p, 'type' in entry ? entry.type : 'File');
      },
    });
  } catch (err) {
    throw new NotABackupError(`${from} is not a backup of the claims registry's embedded database (${(err as Error).message}).`);
  }
  let manifest: Manifest | undefined;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(into, BACKUP_MANIFEST), 'utf8')) as Manifest;
  } catch {
    // no manifest, or not JSON: not ours
  }
  if (!ours || manifest?.format !== FORMAT || !fs.existsSync(path.join(into, PGDATA, 'PG_VERSION'))) {
    throw new NotABackupError(`${from} is not a backup of the claims registry's embedded database.`);
  }
  if (manifest.version !== FORMAT_VERSION) {
    throw new NotABackupError(`${from} is a backup of format ${manifest.version}; this version reads format ${FORMAT_VERSION}.`);
  }
  return manifest;
}

const sameFile = (a: string, b: string) => fs.readFileSync(a).equals(fs.readFileSync(b));

/**
 * PGlite opens a folder with PG_VERSION as a database, and runs initdb into one without it (over
 * whatever files are there). So a swap keeps a PG_VERSION in place throughout: a swap cut short
 * leaves a database with files missing, which refuses to start, never a fresh empty one.
 */
const VERSION_FILE = 'PG_VERSION';

/** A database folder's entries but its lock's and PG_VERSION. */
const entriesOf = (dir: string) => fs.readdirSync(dir).filter((name) => !NOT_DATA.has(name) && name !== VERSION_FILE);

/** Moves a database folder's entries, but PG_VERSION, into another. */
function moveEntries(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true, mode: 0o700 });
  for (const name of entriesOf(from)) fs.renameSync(path.join(from, name), path.join(to, name));
}

export type RestoreResult = { movedAside: string | null; keys: string[]; createdAt: string };

/**
 * Restores a backup into DATA_DIR while no process uses its database (its lock held throughout;
 * a running server's lock is refused with DatabaseLockedError). Unpacked beside the database
 * first and checked there: `prepare` opens the unpacked copy (a DATA_DIR of the same layout,
 * its keys beside it), as the server would, and records the restore. Only then is the present
 * database, with `force`, moved aside into `DATA_DIR/before-restore-<time>` (nothing is deleted),
 * and the copy moved in. Without `force`, a database already there, or a key file that differs
 * from the backup's, is refused.
 */
export async function restoreBackup(opts: {
  dataDir: string;
  from: string;
  force: boolean;
  prepare: (unpacked: string) => Promise<void>;
  now?: Date;
}): Promise<RestoreResult> {
  const { dataDir, from, force } = opts;
  if (!fs.statSync(from, { throwIfNoEntry: false })?.isFile()) throw new NotABackupError(`${from} is not a file.`);
  const pgdata = path.join(dataDir, PGDATA);
  const release = await lockDataDir(pgdata);
  const stamp = (opts.now ?? new Date()).toISOString().replace(/[:.]/gu, '-');
  const unpacked = path.join(dataDir, `restoring-${stamp}`);
  // Once the swap has begun, what is left of the copy is kept (an interrupted swap: see the runbook).
  let swapping = false;
  try {
    const present = fs.readdirSync(pgdata).filter((name) => !NOT_DATA.has(name));
    if (present.length > 0 && !force) {
      throw new RestoreRefusedError(
        `${pgdata} already holds a database. Add --force to move it aside (into ${path.join(dataDir, `before-restore-${stamp}`)}, nothing is deleted) and restore the backup in its place.`,
      );
    }
    fs.mkdirSync(unpacked, { mode: 0o700 });
    const manifest = await unpackBackup(from, unpacked);
    const keys = keyFilesOf(unpacked);
    const differing = keys.filter((k) => fs.existsSync(path.join(dataDir, k)) && !sameFile(path.join(dataDir, k), path.join(unpacked, k)));
    if (differing.length > 0 && !force) {
      throw new RestoreRefusedError(
        `${differing.map((k) => path.join(dataDir, k)).join(', ')} differ from the backup's. Add --force to move them aside and use the backup's.`,
      );
    }
    await opts.prepare(unpacked);

    swapping = true;
    let movedAside: string | null = null;
    if (present.length > 0 || differing.length > 0) {
      movedAside = path.join(dataDir, `before-restore-${stamp}`);
      fs.mkdirSync(movedAside, { mode: 0o700 });
      const asideData = path.join(movedAside, PGDATA);
      moveEntries(pgdata, asideData);
      if (fs.existsSync(path.join(pgdata, VERSION_FILE)))
        fs.copyFileSync(path.join(pgdata, VERSION_FILE), path.join(asideData, VERSION_FILE));
      for (const k of differing) fs.renameSync(path.join(dataDir, k), path.join(movedAside, k));
    }
    for (const k of keys) if (!fs.existsSync(path.join(dataDir, k))) fs.renameSync(path.join(unpacked, k), path.join(dataDir, k));
    // The copy's PG_VERSION replaces the old one at once, then the copy's files follow it.
    fs.renameSync(path.join(unpacked, PGDATA, VERSION_FILE), path.join(pgdata, VERSION_FILE));
    moveEntries(path.join(unpacked, PGDATA), pgdata);
    swapping = false;
    return { movedAside, keys, createdAt: manifest.created_at };
  } finally {
    if (!swapping) fs.rmSync(unpacked, { recursive: true, force: true });
    await release();
  }
}
