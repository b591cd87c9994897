import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { loadConfig } from '../../src/config';
import { openDb } from '../../src/db/db';
import type { Deps } from '../../src/deps';
import { openDeps } from '../../src/startup';
import { dbKind, TEST_HASH_KEY } from '../harness';
import { runAdmin } from '../processes';

/** The embedded database opens slowly on a busy machine, and each command opens it. */
const SPAWN_TIMEOUT = 240_000;
const kind = dbKind();
const url = process.env.TEST_DATABASE_URL;

type Result = { code: number; stdout: string; stderr: string };

/**
 * The audit trail cannot be rewritten (DECISIONS, "Access, hardened"): the database refuses
 * UPDATE, DELETE and TRUNCATE on it; `npm run admin -- audit:verify` passes on an untouched trail,
 * after the retention purge too (which records the hash of the newest event it removed), and
 * names the first event that does not fit once one was changed or removed by hand (the test turns
 * the refusal off to do it, as only someone who owns the table could). Against an embedded
 * database in a folder (closed while a command runs) or this file's own PostgreSQL schema.
 */
describe('npm run admin -- audit:verify', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-audit-verify-'));
  const schema = `test_${randomBytes(6).toString('hex')}`;
  const env: Record<string, string> = {
    DOCUMENT_HASH_KEY: TEST_HASH_KEY,
    SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
    LOG_LEVEL: 'silent',
    DATA_DIR: path.join(dir, 'data'),
    ...(kind === 'postgres' ? { DATABASE_URL: url!, DB_SEARCH_PATH: schema } : {}),
  };
  let deps: Deps | undefined;
  const open = async () => (deps = await openDeps(loadConfig(env), { logger: pino({ level: 'silent' }) }));
  const close = async () => {
    await deps?.close();
    deps = undefined;
  };
  const admin = (...args: string[]): Promise<Result> => runAdmin(env, args, SPAWN_TIMEOUT);
  /** Runs `sql` with the table's refusals off, as the owner of the table could, then turns them on again. */
  async function byHand(d: Deps, sql: string, params: unknown[]) {
    await d.db.query('ALTER TABLE audit_events DISABLE TRIGGER USER');
    try {
      await d.db.query(sql, params);
    } finally {
      await d.db.query('ALTER TABLE audit_events ENABLE TRIGGER USER');
    }
  }

  const refusals: Record<string, string> = {};
  let a: { id: string }, b: { id: string };
  const oldChain = randomUUID();
  let newestOldHash: string;
  let changed: string, afterRemoved: string;
  let intact: Result, purged: Result, afterPurge: Result, subject: Result, brokenA: Result, brokenB: Result, brokenAll: Result;
  let purgeEvent: { target_name: string | null; data: { removed: number; chains: Record<string, { seq: number; hash: string }> } };
  let subjectEvents: { action: string; target_type: string | null; target_name: string | null }[];

  beforeAll(async () => {
    if (kind === 'postgres') {
      const adminDb = await openDb({ kind: 'postgres', url: url!, poolSize: 1 });
      await adminDb.exec(`CREATE SCHEMA ${schema}`);
      await adminDb.close();
    }
    const d = await open();
    a = await d.companies.createCompany(`Chained A ${randomBytes(3).toString('hex')}`);
    b = await d.companies.createCompany(`Chained B ${randomBytes(3).toString('hex')}`);
    for (const co of [a, b]) for (const name of ['one', 'two', 'three']) await d.tokens.create(co.id, name);
    // A chain whose first events are older than AUDIT_RETENTION_DAYS (730), then a recent one.
    for (const days of [800, 790, 780]) {
      await d.db.query(
        `INSERT INTO audit_events (id, company_id, action, actor_type, actor_name, target_type, target_name, created_at)
         VALUES ($1, $2, 'token.created', 'operator', 'command line', 'token', $3, now() - make_interval(days => $4))`,
        [randomUUID(), oldChain, `old ${days}`, days],
      );
    }
    await d.db.query(
      `INSERT INTO audit_events (id, company_id, action, actor_type, actor_name, target_type, target_name)
       VALUES ($1, $2, 'token.created', 'operator', 'command line', 'token', 'recent')`,
      [randomUUID(), oldChain],
    );
    newestOldHash = (await d.db.query<{ hash: string }>(`SELECT hash FROM audit_events WHERE target_name = 'old 780'`))[0]!.hash;
    for (const sql of [
      'DELETE FROM audit_events',
      `DELETE FROM audit_events WHERE target_name = 'old 800'`,
      'TRUNCATE audit_events',
      `UPDATE audit_events SET target_name = 'else' WHERE company_id = '${a.id}'`,
    ]) {
      refusals[sql] = await d.db.query(sql).then(
        () => 'allowed',
        (err: Error) => err.message,
      );
    }
    if (kind === 'pglite') await close(); // the embedded database is one process's at a time

    intact = await admin('audit:verify');
    purged = await admin('purge', '--json');
    afterPurge = await admin('audit:verify', '--json');
    subject = await admin('subject:export', '--date-of-birth', '1970-01-01', '--id-type', 'passport', '--id-number', 'NOBODY123');

    const d2 = deps ?? (await open());
    purgeEvent = (
      await d2.db.query<typeof purgeEvent>(
        `SELECT target_name, data FROM audit_events WHERE action = 'data.purged' AND target_type = 'audit_events' ORDER BY chain_seq DESC LIMIT 1`,
      )
    )[0]!;
    subjectEvents = await d2.db.query(
      `SELECT action, target_type, target_name FROM audit_events WHERE company_id IS NULL AND action IN ('subject.exported', 'data.exported') ORDER BY chain_seq`,
    );
    // By hand: one of A's events changed, and one of B's removed.
    changed = (await d2.db.query<{ id: string }>(`SELECT id FROM audit_events WHERE company_id = $1 AND target_name = 'two'`, [a.id]))[0]!
      .id;
    await byHand(d2, `UPDATE audit_events SET target_name = 'someone else' WHERE id = $1`, [changed]);
    const bEvents = await d2.db.query<{ id: string }>(`SELECT id FROM audit_events WHERE company_id = $1 ORDER BY chain_seq`, [b.id]);
    afterRemoved = bEvents[2]!.id;
    await byHand(d2, 'DELETE FROM audit_events WHERE id = $1', [bEvents[1]!.id]);
    if (kind === 'pglite') await close();

    brokenA = await admin('audit:verify', '--company', a.id);
    brokenB = await admin('audit:verify', '--company', b.id);
    brokenAll = await admin('audit:verify');
  }, 20 * 60_000);

  afterAll(async () => {
    await close();
    if (kind === 'postgres') {
      const adminDb = await openDb({ kind: 'postgres', url: url!, poolSize: 1 });
      await adminDb.exec(`DROP SCHEMA ${schema} CASCADE`);
      await adminDb.close();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the database refuses DELETE, TRUNCATE and UPDATE on the audit events', () => {
    for (const [sql, outcome] of Object.entries(refusals)) expect(outcome, sql).toMatch(/audit_events is append-only: \w+ is refused/u);
  });

  it('passes on an untouched trail, every chain checked', () => {
    expect(intact.code, intact.stderr).toBe(0);
    expect(intact.stdout).toMatch(/^The audit trail is intact: \d+ chains, \d+ events checked\.$/mu);
  });

  it('passes after the retention purge, which records the hash of the newest event it removed', () => {
    expect(purged.code, purged.stderr).toBe(0);
    expect(JSON.parse(purged.stdout)).toMatchObject({ audit_events_deleted: 3 });
    expect(purgeEvent.target_name).toMatch(/^3 audit events created before /u);
    expect(purgeEvent.data.removed).toBe(3);
    expect(purgeEvent.data.chains[oldChain]).toEqual({ seq: 3, hash: newestOldHash });
    expect(afterPurge.code, afterPurge.stderr).toBe(0);
    // A's, B's, the old one's (its recent event) and the operator's (the purge's own events).
    expect(JSON.parse(afterPurge.stdout)).toMatchObject({ ok: true, chains: 4, broken: [] });
  });

  it('a subject export is a data.exported event naming it, beside subject.exported', () => {
    expect(subject.code, subject.stderr).toBe(0);
    expect(subjectEvents).toEqual([
      { action: 'subject.exported', target_type: 'subject', target_name: null },
      { action: 'data.exported', target_type: 'subject', target_name: 'subject export' },
    ]);
  });

  it('names the event changed by hand, and its company, with a failing exit code', () => {
    expect(brokenA.code).toBe(1);
    expect(brokenA.stdout).toContain(
      `Event ${changed} of company ${a.id} (number 3 of its chain) does not fit: its content or its hash was changed.`,
    );
    expect(brokenA.stdout).not.toContain(b.id);
  });

  it('names the event after one removed by hand', () => {
    expect(brokenB.code).toBe(1);
    expect(brokenB.stdout).toContain(
      `Event ${afterRemoved} of company ${b.id} (number 3 of its chain) does not fit: event 2 of the chain is missing`,
    );
  });

  it('checks every chain without --company, naming the first event that does not fit in each', () => {
    expect(brokenAll.code).toBe(1);
    expect(brokenAll.stdout).toContain(`Event ${changed} of company ${a.id}`);
    expect(brokenAll.stdout).toContain(`Event ${afterRemoved} of company ${b.id}`);
    expect(brokenAll.stdout.trim().split('\n')).toHaveLength(2);
  });
});
