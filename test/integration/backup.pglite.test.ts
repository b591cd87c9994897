import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import * as tar from 'tar';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { openDb } from '../../src/db/db';
import { claimBody } from '../harness';
import { freePort, kill, killAll, runAdmin, startScript, until } from '../processes';

/**
 * `admin backup` and `admin restore` of the embedded database, as an operator runs them: against a
 * real server (`npm start`) taking submissions, and against a stopped one.
 */
afterEach(killAll);

// Generous: each command and server start compiles TypeScript and opens PGlite (tens of seconds on a busy machine).
const TIMEOUT = 900_000;
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});
const tempDir = (name: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `claims-${name}-`));
  dirs.push(dir);
  return dir;
};

/** `npm run admin` on the embedded database in `dataDir`; fails the test unless it exits 0. */
async function admin(dataDir: string, ...args: string[]) {
  const r = await runAdmin({ DATA_DIR: dataDir }, args, TIMEOUT);
  expect(r.code, r.stderr).toBe(0);
  return r;
}

async function startServer(dataDir: string) {
  const port = await freePort();
  const server = startScript('start', { LOG_LEVEL: 'info', HOST: '127.0.0.1', DATA_DIR: dataDir, PORT: String(port) });
  // A server compiles PGlite optimized at start: longer than printed()'s minute on a busy machine.
  await until(
    'the server to be ready',
    () => {
      if (server.exitCode !== null || server.signalCode !== null) throw new Error(`the server exited: ${server.output().slice(-2000)}`);
      return server.output().includes('claims registry ready');
    },
    TIMEOUT / 3,
  );
  return { server, base: `http://127.0.0.1:${port}` };
}

/** The rows of `sql` in the embedded database of `dataDir` (no server may hold it). */
async function queryStopped<T>(dataDir: string, sql: string): Promise<T[]> {
  const db = await openDb({ kind: 'pglite', dataDir: path.join(dataDir, 'pgdata') });
  try {
    return await db.query<T>(sql);
  } finally {
    await db.close();
  }
}

const backupEvents = (dataDir: string, action: string) =>
  queryStopped<{ actor_type: string; actor_name: string; target_type: string; target_name: string; company_id: string | null }>(
    dataDir,
    `SELECT actor_type, actor_name, target_type, target_name, company_id FROM audit_events WHERE action = '${action}' ORDER BY created_at`,
  );

describe('admin backup while the server runs and takes submissions', () => {
  it(
    'copies every claim answered 201 before it started; the copy restores into a fresh folder and a server serves it',
    async () => {
      const source = tempDir('backup-src');
      const company = JSON.parse((await admin(source, 'company:create', '--name', 'Backup Mutual', '--json')).stdout) as { id: string };
      const { token } = JSON.parse((await admin(source, 'token:create', '--company', company.id, '--name', 'load', '--json')).stdout) as {
        token: string;
      };
      const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const running = await startServer(source);

      // Several clients submitting at once, each answer noted with the moment it came.
      const answered: { id: string; at: number }[] = [];
      const failures: string[] = [];
      let stop = false;
      const client = async () => {
        while (!stop) {
          const res = await fetch(`${running.base}/api/v1/claims`, { method: 'POST', headers: auth, body: JSON.stringify(claimBody()) });
          if (res.status === 201) answered.push({ id: ((await res.json()) as { data: { id: string } }).data.id, at: Date.now() });
          else failures.push(`${res.status} ${await res.text()}`);
        }
      };
      const load = Promise.all(Array.from({ length: 4 }, client));
      try {
        while (answered.length < 40 && failures.length === 0) await new Promise((r) => setTimeout(r, 50));
        const before = answered.map((a) => a.id);
        const startedAt = Date.now();
        const file = path.join(tempDir('backup-out'), 'registry.tgz');
        const backup = await admin(source, 'backup', '--out', file);
        const endedAt = Date.now();
        expect(backup.stdout).toContain('taken by the running server');
        // The submissions went on during the backup (the copy waits between two statements, not for the load to stop).
        expect(answered.filter((a) => a.at > startedAt && a.at < endedAt).length).toBeGreaterThan(0);
        // Only the backup under its name in the folder: no temporary file left beside it.
        expect(fs.readdirSync(path.dirname(file))).toEqual(['registry.tgz']);
        expect(fs.statSync(file).mode & 0o777).toBe(0o600);

        // The server holds the folder: a restore into it is refused, and changes nothing.
        const refused = await runAdmin({ DATA_DIR: source }, ['restore', '--from', file, '--force'], TIMEOUT);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain('is in use');
        expect(refused.stderr).toContain('Stop it first');
        expect(fs.readdirSync(source).filter((n) => n.startsWith('before-restore') || n.startsWith('restoring'))).toEqual([]);

        stop = true;
        await load;
        expect(failures).toEqual([]);

        const fresh = tempDir('backup-restored');
        const restored = await admin(fresh, 'restore', '--from', file);
        expect(restored.stdout).toContain(`into ${fresh}`);
        // The keys generated into the first folder came with the copy (the server would refuse another).
        expect(fs.readFileSync(path.join(fresh, 'document-hash.key'), 'utf8')).toBe(
          fs.readFileSync(path.join(source, 'document-hash.key'), 'utf8'),
        );

        await kill(running.server, 'SIGTERM');
        const copy = await startServer(fresh);
        const missing: string[] = [];
        for (const id of before) {
          const res = await fetch(`${copy.base}/api/v1/claims/${id}`, { headers: auth });
          if (res.status !== 200) missing.push(`${id}: ${res.status}`);
        }
        expect(missing).toEqual([]);
        await kill(copy.server, 'SIGTERM');

        // Both acts on record, by the command line, in the operator's trail: the backup in the
        // database it copied, the restore in the database it brought back.
        expect(await backupEvents(source, 'database.backed_up')).toEqual([
          { actor_type: 'operator', actor_name: 'command line', target_type: 'database', target_name: file, company_id: null },
        ]);
        expect(await backupEvents(fresh, 'database.restored')).toEqual([
          { actor_type: 'operator', actor_name: 'command line', target_type: 'database', target_name: file, company_id: null },
        ]);
      } finally {
        stop = true;
        await load.catch(() => {});
      }
    },
    TIMEOUT,
  );
});

describe('admin backup and restore with the server stopped', () => {
  it(
    'backs up a stopped database itself; restore refuses a folder with a database unless --force, which moves it aside',
    async () => {
      const dataDir = tempDir('backup-stopped');
      await admin(dataDir, 'company:create', '--name', 'Kept Mutual');
      const file = path.join(tempDir('backup-stopped-out'), 'copy.tgz');
      const backup = await admin(dataDir, 'backup', '--out', file, '--json');
      expect(JSON.parse(backup.stdout)).toEqual({ file, bytes: fs.statSync(file).size, taken_by: 'command' });
      expect(await backupEvents(dataDir, 'database.backed_up')).toEqual([
        { actor_type: 'operator', actor_name: 'command line', target_type: 'database', target_name: file, company_id: null },
      ]);
      // Made after the backup: gone once it is restored.
      await admin(dataDir, 'company:create', '--name', 'Later Mutual');

      const refused = await runAdmin({ DATA_DIR: dataDir }, ['restore', '--from', file], TIMEOUT);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('already holds a database. Add --force');

      const forced = JSON.parse((await admin(dataDir, 'restore', '--from', file, '--force', '--json')).stdout) as { moved_aside: string };
      expect(path.dirname(forced.moved_aside)).toBe(dataDir);
      expect(path.basename(forced.moved_aside)).toMatch(/^before-restore-/u);
      const names = async (dir: string) =>
        (await queryStopped<{ name: string }>(dir, 'SELECT name FROM companies ORDER BY name')).map((c) => c.name);
      expect(await names(dataDir)).toEqual(['Kept Mutual']);
      // The database that was there is kept whole, aside.
      expect(await names(forced.moved_aside)).toEqual(['Kept Mutual', 'Later Mutual']);
    },
    TIMEOUT,
  );

  it(
    'restore refuses a file that is not one of our backups, or not whole, and leaves the folder as it was',
    async () => {
      const dataDir = tempDir('restore-bad');
      const inputs = tempDir('restore-bad-in');
      // Another gzipped tar holding a folder named pgdata, the same cut short, and no archive at all.
      fs.mkdirSync(path.join(inputs, 'pgdata'));
      fs.writeFileSync(path.join(inputs, 'pgdata', 'PG_VERSION'), '18\n');
      fs.writeFileSync(path.join(inputs, 'pgdata', 'filler'), randomBytes(256 * 1024));
      const other = path.join(inputs, 'other.tgz');
      await tar.create({ gzip: true, cwd: inputs, file: other }, ['pgdata']);
      const cut = path.join(inputs, 'cut.tgz');
      fs.writeFileSync(cut, fs.readFileSync(other).subarray(0, 100_000));
      const text = path.join(inputs, 'text.tgz');
      fs.writeFileSync(text, 'not a backup\n'.repeat(100));
      for (const file of [other, cut, text]) {
        const r = await runAdmin({ DATA_DIR: dataDir }, ['restore', '--from', file], TIMEOUT);
        expect(r.code, file).toBe(1);
        expect(r.stderr).toContain(`${file} is not a backup of the claims registry's embedded database`);
        expect(fs.readdirSync(dataDir).filter((n) => n !== 'pgdata')).toEqual([]);
        expect(fs.readdirSync(path.join(dataDir, 'pgdata'))).toEqual([]);
      }
    },
    TIMEOUT,
  );

  it(
    'with DATABASE_URL, backup points to the PostgreSQL tools and exits non-zero',
    async () => {
      const out = path.join(tempDir('backup-pg'), 'x.tgz');
      const r = await runAdmin(
        { DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none', DOCUMENT_HASH_KEY: 'k'.repeat(40) },
        ['backup', '--out', out],
        TIMEOUT,
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('pg_dump');
      expect(r.stderr).toContain('WAL archiving');
      expect(fs.existsSync(out)).toBe(false);
    },
    TIMEOUT,
  );
});
