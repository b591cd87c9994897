import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { FastifyInstance, InjectOptions } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { openDb } from '../../src/db/db';
import { createRegistryRepository } from '../../src/db/registry-repository';
import { minusYears } from '../../src/domain/dates';
import { createRegistryService } from '../../src/domain/registry/registry-service';
import type { Deps } from '../../src/deps';
import { openDeps, startBackground } from '../../src/startup';
import { addDays, claimBody, dbKind, TEST_HASH_KEY } from '../harness';
import { runAdmin } from '../processes';

const SPAWN_TIMEOUT = 90_000;
const kind = dbKind();
const url = process.env.TEST_DATABASE_URL;

type Result = { code: number; stdout: string; stderr: string };
type Opened = { app: FastifyInstance; deps: Deps; close(): Promise<void> };

/**
 * Retention and subject access through the operator's command line, against the same database the
 * API wrote: an embedded database in a folder (the server is closed while the command runs, as an
 * operator must), or this file's own PostgreSQL schema (side by side).
 */
describe('retention purge and subject access (npm run admin -- purge / subject:export)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-retention-'));
  const schema = `test_${randomBytes(6).toString('hex')}`;
  const env: Record<string, string> = {
    DOCUMENT_HASH_KEY: TEST_HASH_KEY,
    SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
    LOG_LEVEL: 'silent',
    DATA_DIR: path.join(dir, 'data'),
    ...(kind === 'postgres' ? { DATABASE_URL: url!, DB_SEARCH_PATH: schema } : {}),
  };
  let current: Opened;

  async function open(): Promise<Opened> {
    const logger = pino({ level: 'silent' });
    const deps = await openDeps(loadConfig(env), { logger });
    startBackground(deps);
    const app = await buildApp(deps, { logger });
    await app.ready();
    return {
      app,
      deps,
      close: async () => {
        await app.close();
        await deps.close();
      },
    };
  }

  const admin = (...args: string[]): Promise<Result> => runAdmin(env, args, SPAWN_TIMEOUT);

  const today = () => current.deps.today();
  const inject = (opts: InjectOptions) => current.app.inject(opts);
  async function company(name: string) {
    const c = await current.deps.companies.createCompany(`${name} ${randomBytes(3).toString('hex')}`);
    const { token } = await current.deps.tokens.create(c.id, 'test');
    return { ...c, auth: { authorization: `Bearer ${token}` } };
  }
  type Co = Awaited<ReturnType<typeof company>>;
  const doc = () => `R${randomBytes(6).toString('hex').toUpperCase()}`;
  const plate = () => `RT${randomBytes(3).toString('hex').toUpperCase()}`;
  async function submit(co: Co, number: string, dob: string, overrides: Record<string, unknown> = {}) {
    const body = claimBody(
      { vehicle_registration: plate(), claim_date: addDays(today(), -10), ...overrides },
      {
        date_of_birth: dob,
        id_documents: [{ type: 'passport', number }],
      },
    );
    const res = await inject({ method: 'POST', url: '/api/v1/claims', headers: co.auth, payload: body });
    return res;
  }
  async function claim(co: Co, number: string, dob = '1970-01-01', overrides: Record<string, unknown> = {}) {
    const res = await submit(co, number, dob, overrides);
    expect(res.statusCode, res.body).toBe(201);
    return res.json().data as { id: string; vehicle_registration: string; client: { id: string } };
  }
  /** The alerts that name any of the claims, told about them or to their companies. */
  const alertsOf = async (...ids: string[]) =>
    (
      await current.deps.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM alerts WHERE claim_id = ANY ($1::uuid[]) OR matched_claim_id = ANY ($1::uuid[])',
        [ids],
      )
    )[0]!.n;
  const backdateClaim = (id: string, date: string) =>
    current.deps.db.query('UPDATE claims SET claim_date = $2::date WHERE id = $1', [id, date]);

  let a: Co, b: Co, c: Co;
  const numbers = { x: doc(), y: doc(), z: doc(), s: doc() };
  let xOld: { id: string; vehicle_registration: string },
    yOld: { id: string },
    yNew: { id: string; vehicle_registration: string },
    zEdge: { id: string };
  let subject: Result, subjectWrongDob: Result, missingArg: Result, purged: Result, again: Result;

  beforeAll(async () => {
    if (kind === 'postgres') {
      const adminDb = await openDb({ kind: 'postgres', url: url!, poolSize: 1 });
      await adminDb.exec(`CREATE SCHEMA ${schema}`);
      await adminDb.close();
    }
    current = await open();
    [a, b, c] = [await company('A'), await company('B'), await company('C')];
    // X: one claim, which expires, so X (and the document) goes. Y: one expired claim and one
    // recent, so Y stays. Z: a claim dated exactly RETENTION_YEARS ago stays.
    xOld = await claim(a, numbers.x);
    // yOld shares the plate of an earlier claim of B's: B is told about yOld.
    const bEarly = await claim(b, doc());
    yOld = await claim(a, numbers.y, '1970-01-01', { vehicle_registration: bEarly.vehicle_registration });
    yNew = await claim(a, numbers.y);
    zEdge = await claim(a, numbers.z);
    // Look-ups before the claims age: B's plate searches return xOld and yNew; A asks for xOld's matches.
    for (const p of [xOld.vehicle_registration, yNew.vehicle_registration]) {
      expect(
        (await inject({ method: 'POST', url: '/api/v1/claims/search-by-plate', headers: b.auth, payload: { vehicle_registration: p } }))
          .statusCode,
      ).toBe(200);
    }
    expect((await inject({ method: 'GET', url: `/api/v1/claims/${xOld.id}/matches`, headers: a.auth })).statusCode).toBe(200);
    // A later claim of B's on xOld's plate: A is told about it, on xOld.
    await claim(b, doc(), '1970-01-01', { vehicle_registration: xOld.vehicle_registration });
    expect(await alertsOf(xOld.id, yOld.id)).toBe(2);
    // C's look-ups: one 731 days old (goes), one 729 days old (stays).
    for (const days of [731, 729]) {
      const p = plate();
      await inject({
        method: 'POST',
        url: '/api/v1/claims/search-by-plate',
        headers: c.auth,
        payload: { vehicle_registration: p, purpose: `${days}` },
      });
      await current.deps.lookupJournal.flush(); // the look-up log is written in batches
      await current.deps.db.query(`UPDATE lookups SET created_at = now() - make_interval(days => $2) WHERE purpose = $1`, [
        `${days}`,
        days,
      ]);
    }
    await backdateClaim(xOld.id, minusYears(today(), 7));
    await backdateClaim(yOld.id, addDays(minusYears(today(), 6), -1));
    await backdateClaim(zEdge.id, minusYears(today(), 6));

    // The subject: claims at A and B, and a look-up by C that returned one of them.
    const s1 = await claim(a, numbers.s, '1966-09-09');
    await claim(b, numbers.s, '1966-09-09');
    await inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: c.auth,
      payload: { vehicle_registration: s1.vehicle_registration },
    });

    if (kind === 'pglite') await current.close(); // the embedded database is one process's at a time
    subject = await admin(
      'subject:export',
      '--date-of-birth',
      '1966-09-09',
      '--id-type',
      'passport',
      '--id-number',
      `lt-${numbers.s.toLowerCase()}`,
      '--json',
    );
    subjectWrongDob = await admin(
      'subject:export',
      '--date-of-birth',
      '1966-09-10',
      '--id-type',
      'passport',
      '--id-number',
      numbers.s,
      '--json',
    );
    missingArg = await admin('subject:export', '--date-of-birth', '1966-09-09', '--id-type', 'passport', '--json');
    // An uploaded file that became no import (its process was killed), two days old: the purge's sweep removes it.
    const orphan = path.join(dir, 'data', 'imports', 'imports', a.id, '0190a0b0-0000-7000-8000-000000000001');
    fs.mkdirSync(path.dirname(orphan), { recursive: true });
    fs.writeFileSync(orphan, 'first_name\n');
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
    fs.utimesSync(orphan, twoDaysAgo, twoDaysAgo);
    purged = await admin('purge', '--json');
    again = await admin('purge', '--json');
    if (kind === 'pglite') current = await open();
  }, 4 * SPAWN_TIMEOUT);

  afterAll(async () => {
    await current?.close();
    if (kind === 'postgres') {
      const adminDb = await openDb({ kind: 'postgres', url: url!, poolSize: 1 });
      await adminDb.exec(`DROP SCHEMA ${schema} CASCADE`);
      await adminDb.close();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('purge --json prints what it removed: expired claims, clients left with no claim, look-up entries', () => {
    expect(purged.code, purged.stderr).toBe(0);
    expect(purged.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(purged.stdout)).toEqual({
      claims_deleted: 2,
      clients_deleted: 1,
      lookups_deleted: 2, // A's matches of xOld, and C's 731-day-old search
      alerts_deleted: 2, // A's alert about B's later claim on xOld's plate, B's alert about yOld
      files_deleted: 1, // the orphaned upload
      webhook_bodies_deleted: 0,
      uploads_deleted: 0,
      claims_dated_before: minusYears(today(), 6),
      lookups_created_before: expect.any(String),
      webhook_bodies_finished_before: expect.any(String),
      uploads_made_before: expect.any(String),
      audit_events_deleted: 0,
      audit_events_created_before: expect.any(String),
    });
    expect(JSON.parse(again.stdout)).toMatchObject({
      claims_deleted: 0,
      clients_deleted: 0,
      lookups_deleted: 0,
      alerts_deleted: 0,
      files_deleted: 0,
    });
  });

  it('claims dated before today minus RETENTION_YEARS are gone; one dated exactly then stays', async () => {
    const status = async (id: string) => (await inject({ method: 'GET', url: `/api/v1/claims/${id}`, headers: a.auth })).statusCode;
    expect(await status(xOld.id)).toBe(404);
    expect(await status(yOld.id)).toBe(404);
    expect(await status(yNew.id)).toBe(200);
    expect(await status(zEdge.id)).toBe(200);
  });

  it('a client left with no claim is deleted with its documents; a client with a claim left keeps them', async () => {
    // X's document is free again: another date of birth is no longer a data-quality error.
    expect((await submit(a, numbers.x, '1999-09-09')).statusCode).toBe(201);
    // Y is still on record: the same document with another date of birth is refused.
    expect((await submit(a, numbers.y, '1999-09-09')).statusCode).toBe(422);
  });

  it("the expired claims' look-up entries are gone; other look-ups, and look-ups younger than LOOKUP_RETENTION_DAYS, stay", async () => {
    const list = async (co: Co) => (await inject({ method: 'GET', url: '/api/v1/lookups', headers: co.auth })).json().data;
    expect((await list(a)).filter((l: { kind: string }) => l.kind === 'matches')).toEqual([]);
    const ofB = await list(b);
    expect(ofB.map((l: { vehicle_registration: string }) => l.vehicle_registration).sort()).toEqual(
      [xOld.vehicle_registration, yNew.vehicle_registration].sort(),
    );
    expect(ofB.map((l: { purpose: string | null }) => l.purpose)).toEqual([null, null]);
    expect((await list(c)).map((l: { purpose: string | null }) => l.purpose)).toEqual([null, '729']);
    const who = await inject({ method: 'GET', url: `/api/v1/claims/${yNew.id}/lookups`, headers: a.auth });
    expect(who.json().data).toEqual([expect.objectContaining({ company_name: b.name, kind: 'plate_search' })]);
    // B's search that returned xOld is kept (it is B's look-up) but no longer names the expired claim.
    const naming = await current.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM lookups WHERE $1::uuid = ANY (claim_ids)', [
      xOld.id,
    ]);
    expect(naming[0]!.n).toBe(0);
  });

  it("an expired claim's alerts are gone, whether told about it or to its company", async () => {
    const ofA = (await inject({ method: 'GET', url: '/api/v1/alerts', headers: a.auth })).json().data as { claim_id: string }[];
    expect(ofA.filter((x) => x.claim_id === xOld.id)).toEqual([]);
    expect(await alertsOf(xOld.id, yOld.id)).toBe(0);
  });

  it('subject:export prints the person, every claim with its company, and the look-ups that returned them; never the document number', () => {
    expect(subject.code, subject.stderr).toBe(0);
    expect(subject.stdout.toUpperCase()).not.toContain(numbers.s);
    const out = JSON.parse(subject.stdout);
    expect(out.person).toMatchObject({
      first_name: 'Ona',
      last_name: 'Petraitė',
      date_of_birth: '1966-09-09',
      id_documents: [{ type: 'passport' }],
    });
    expect(out.claims.map((x: { company_name: string }) => x.company_name).sort()).toEqual([a.name, b.name].sort());
    // C's plate search, and the alert that told A of B's later claim of the person.
    expect(out.lookups).toHaveLength(2);
    expect(out.lookups).toEqual(
      expect.arrayContaining([
        { company_name: c.name, kind: 'plate_search', claim_id: expect.any(String), created_at: expect.any(String) },
        { company_name: a.name, kind: 'alert', claim_id: expect.any(String), created_at: expect.any(String) },
      ]),
    );
    expect(subjectWrongDob.code).toBe(0);
    expect(JSON.parse(subjectWrongDob.stdout)).toEqual({ person: null, claims: [], lookups: [], deliveries: [] });
  });

  it('subject:export names a missing argument and exits with 2', () => {
    expect(missingArg.code).toBe(2);
    expect(missingArg.stderr).toContain('Missing --id-number.');
    expect(missingArg.stdout).toBe('');
  });

  it('each purge transaction removes at most its batch size, and the purge goes on until nothing is left', async () => {
    const service = (batch: number) =>
      createRegistryService({
        registry: createRegistryRepository(current.deps.db),
        journal: current.deps.lookupJournal,
        hashDocument: () => 'unused',
        today,
        timeZone: 'UTC',
        searchHistoryYears: 3,
        retentionYears: 6,
        lookupRetentionDays: 730,
        purgeBatchSize: batch,
      });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await claim(a, doc())).id);
    for (const id of ids) await backdateClaim(id, minusYears(today(), 8));
    const repo = createRegistryRepository(current.deps.db);
    expect(await repo.purgeClaimsBatch(minusYears(today(), 6), 2)).toEqual({ claims: 2, clients: 2, lookups: 0, alerts: 0 });
    expect(await service(2).purge()).toMatchObject({ claims: 3, clients: 3 });
    expect(await service(2).purgeIfDue()).not.toBeNull(); // first run of the day
    expect(await service(2).purgeIfDue()).toBeNull(); // already done today, by any process
  });
});
