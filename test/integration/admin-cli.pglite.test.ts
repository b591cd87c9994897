import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openDb } from '../../src/db/db';
import { createSignInRepository } from '../../src/db/sign-in-repository';
import { runAdmin } from '../processes';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SPAWN_TIMEOUT = 60_000;

type Result = { code: number; stdout: string; stderr: string };

/**
 * Runs the admin CLI as an operator would, against the embedded database in `dataDir`. The
 * environment is built from scratch so that a DATABASE_URL of the developer's shell cannot leak in.
 */
const admin = (dataDir: string, ...args: string[]): Promise<Result> => runAdmin({ DATA_DIR: dataDir }, args, SPAWN_TIMEOUT);

// Spawning costs a second or two each, and the CLI's PostgreSQL path is the same code as the
// server's: one run, against the embedded database, is enough.
describe('admin CLI (embedded database)', () => {
  let dir: string;
  let dataDir: string;
  let created: Result;
  const companyName = `Base ${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-admin-cli-'));
    dataDir = path.join(dir, 'data');
    created = await admin(dataDir, 'company:create', '--name', companyName, '--json');
  }, SPAWN_TIMEOUT);
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const company = () => JSON.parse(created.stdout) as { id: string; name: string };

  it('company:create --json prints exactly {"id","name"} on stdout and nothing else', () => {
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toBe('');
    expect(created.stdout.endsWith('\n')).toBe(true);
    expect(created.stdout.trim().split('\n')).toHaveLength(1);
    const json = JSON.parse(created.stdout);
    expect(Object.keys(json)).toEqual(['id', 'name']);
    expect(json).toEqual({ id: expect.stringMatching(UUID), name: companyName });
  });

  it(
    "company:limits sets a company's own rate limit (0: none), back to the default with `default`, and refuses a bad value",
    async () => {
      const set = await admin(dataDir, 'company:limits', '--company', company().id, '--per-minute', '120', '--json');
      expect(set.code, set.stderr).toBe(0);
      expect(JSON.parse(set.stdout)).toEqual({
        company_id: company().id,
        per_minute: 120,
        effective_per_minute: 120,
        company_per_minute: null,
        effective_company_per_minute: 30_000,
      });
      const db = await openDb({ kind: 'pglite', dataDir: path.join(dataDir, 'pgdata') });
      try {
        expect(await db.query('SELECT per_minute FROM company_rate_limits WHERE company_id = $1', [company().id])).toEqual([
          { per_minute: 120 },
        ]);
        // An administrative act: on record, by the command line.
        expect(
          await db.query("SELECT actor_name, target_name FROM audit_events WHERE company_id = $1 AND action = 'company.settings_changed'", [
            company().id,
          ]),
        ).toEqual([{ actor_name: 'command line', target_name: 'rate limits: per token: 120 a minute' }]);
      } finally {
        await db.close();
      }
      const reset = await admin(dataDir, 'company:limits', '--company', company().id, '--per-minute', 'default', '--json');
      expect(JSON.parse(reset.stdout)).toEqual({
        company_id: company().id,
        per_minute: null,
        effective_per_minute: 6000,
        company_per_minute: null,
        effective_company_per_minute: 30_000,
      });
      // The company's budget for all its tokens together, beside each token's.
      const together = await admin(dataDir, 'company:limits', '--company', company().id, '--company-per-minute', '500', '--json');
      expect(JSON.parse(together.stdout)).toMatchObject({ per_minute: null, company_per_minute: 500, effective_company_per_minute: 500 });
      const neither = await admin(dataDir, 'company:limits', '--company', company().id);
      expect(neither.code).toBe(2);
      expect(neither.stderr).toContain('Give --per-minute, --company-per-minute or both.');
      const bad = await admin(dataDir, 'company:limits', '--company', company().id, '--per-minute', 'many');
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--per-minute must be a whole number');
    },
    SPAWN_TIMEOUT * 3,
  );

  it(
    'token:create --json prints {"id","name","scopes","expires_at","token"} once; token:list never shows the value; token:revoke marks it revoked',
    async () => {
      const made = await admin(dataDir, 'token:create', '--company', company().id, '--name', 'ci pipeline', '--json');
      expect(made.code, made.stderr).toBe(0);
      expect(made.stderr).toBe('');
      const token = JSON.parse(made.stdout);
      expect(Object.keys(token)).toEqual(['id', 'name', 'scopes', 'expires_at', 'token']);
      expect(token).toEqual({
        id: expect.stringMatching(UUID),
        name: 'ci pipeline',
        // Every scope and 90 days unless told otherwise.
        scopes: ['claims:read', 'claims:write', 'search', 'imports', 'alerts:read', 'logs:read'],
        expires_at: expect.any(String),
        token: expect.stringMatching(/^csk_[0-9A-Za-z]{36}$/),
      });
      const days = (Date.parse(token.expires_at) - Date.now()) / 86_400_000;
      expect(days).toBeGreaterThan(89.9);
      expect(days).toBeLessThanOrEqual(90);

      const listed = await admin(dataDir, 'token:list', '--company', company().id, '--json');
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).not.toContain(token.token);
      const list = JSON.parse(listed.stdout) as Record<string, unknown>[];
      const entry = list.find((t) => t.id === token.id);
      expect(entry).toMatchObject({ name: 'ci pipeline', created_at: expect.any(String), last_used_at: null, revoked_at: null });
      expect(entry).not.toHaveProperty('token');
      expect(token.token.startsWith(entry!.token_prefix as string)).toBe(true);
      expect((entry!.token_prefix as string).length).toBeLessThan(16);

      const revoked = await admin(dataDir, 'token:revoke', token.id, '--json');
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(JSON.parse(revoked.stdout)).toMatchObject({ id: token.id, revoked_at: expect.any(String) });

      const after = await admin(dataDir, 'token:list', '--company', company().id);
      expect(after.code).toBe(0);
      expect(after.stdout).toContain('REVOKED');
    },
    4 * SPAWN_TIMEOUT,
  );

  it(
    'refuses bad arguments with a non-zero exit and a clear message on stderr',
    async () => {
      // A typo is reported before any database is opened or created.
      const untouched = path.join(dir, 'never-created');
      const unknownCommand = await admin(untouched, 'company:delete', '--json');
      expect(unknownCommand.code).not.toBe(0);
      expect(unknownCommand.stderr).toContain('Unknown command "company:delete"');
      expect(unknownCommand.stdout).toBe('');
      expect(fs.existsSync(untouched)).toBe(false);

      const unknownOption = await admin(dataDir, 'company:create', '--title', 'X');
      expect(unknownOption.code).not.toBe(0);
      expect(unknownOption.stderr).toMatch(/Unknown option '--title'/);
      expect(unknownOption.stdout).toBe('');

      const missing = await admin(dataDir, 'token:create', '--name', 'no company', '--json');
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain('Missing --company.');
      expect(missing.stdout).toBe('');
    },
    3 * SPAWN_TIMEOUT,
  );

  it(
    'user:create --role viewer, token:create --scopes --expires-in-days, company:suspend/resume, and audit:export --jsonl of it all',
    async () => {
      const viewer = await admin(
        dataDir,
        'user:create',
        '--company',
        company().id,
        '--email',
        'viewer@cli.example',
        '--role',
        'viewer',
        '--json',
      );
      expect(viewer.code, viewer.stderr).toBe(0);
      const password = JSON.parse(viewer.stdout).password as string;
      expect(JSON.parse(viewer.stdout)).toMatchObject({ role: 'viewer' });
      const badRole = await admin(dataDir, 'user:create', '--company', company().id, '--email', 'x@cli.example', '--role', 'owner');
      expect(badRole.code).toBe(2);
      expect(badRole.stderr).toContain('--role must be admin, member or viewer.');

      const scoped = await admin(
        dataDir,
        'token:create',
        '--company',
        company().id,
        '--name',
        'reader',
        '--scopes',
        'search,logs:read',
        '--expires-in-days',
        '7',
        '--json',
      );
      expect(scoped.code, scoped.stderr).toBe(0);
      const token = JSON.parse(scoped.stdout) as { scopes: string[]; expires_at: string; token: string };
      expect(token.scopes).toEqual(['search', 'logs:read']);
      expect((Date.parse(token.expires_at) - Date.now()) / 86_400_000).toBeCloseTo(7, 1);
      const tooLong = await admin(dataDir, 'token:create', '--company', company().id, '--name', 'long', '--expires-in-days', '400');
      expect(tooLong.code).toBe(1);
      expect(tooLong.stderr).toContain('A token may live at most 366 days');
      const badScope = await admin(dataDir, 'token:create', '--company', company().id, '--name', 'bad', '--scopes', 'everything');
      expect(badScope.code).toBe(1);
      expect(badScope.stderr).toContain('The scope everything is not one of');

      const suspended = await admin(dataDir, 'company:suspend', '--company', company().id, '--json');
      expect(suspended.code, suspended.stderr).toBe(0);
      expect(JSON.parse(suspended.stdout)).toMatchObject({ id: company().id, suspended_at: expect.any(String) });
      const resumed = await admin(dataDir, 'company:resume', '--company', company().id, '--json');
      expect(JSON.parse(resumed.stdout)).toMatchObject({ id: company().id, suspended_at: null });

      const exported = await admin(dataDir, 'audit:export', '--company', company().id, '--since', '2000-01-01', '--jsonl');
      expect(exported.code, exported.stderr).toBe(0);
      const events = exported.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { action: string; actor: unknown; ip: unknown; request_id: unknown });
      expect(events.map((e) => e.action).slice(0, 4)).toEqual(['company.resumed', 'company.suspended', 'token.created', 'person.created']);
      for (const e of events) {
        expect(e).toMatchObject({ actor: { type: 'operator', id: null, name: 'command line' }, ip: null, request_id: null });
      }
      for (const secret of [password, token.token]) expect(exported.stdout).not.toContain(secret);
      const future = await admin(dataDir, 'audit:export', '--company', company().id, '--since', '2999-01-01', '--jsonl');
      expect(future.stdout).toBe('');
      const noJsonl = await admin(dataDir, 'audit:export', '--company', company().id);
      expect(noJsonl.code).toBe(2);
    },
    10 * SPAWN_TIMEOUT,
  );

  it(
    'refuses with a clear message while another process holds the embedded database',
    async () => {
      const held = await openDb({ kind: 'pglite', dataDir: path.join(dataDir, 'pgdata') });
      try {
        const res = await admin(dataDir, 'company:list', '--json');
        expect(res.code).not.toBe(0);
        expect(res.stderr).toMatch(/in use by another process/);
        expect(res.stdout).toBe('');
      } finally {
        await held.close();
      }
    },
    SPAWN_TIMEOUT,
  );
  it(
    'sso:domain-approve makes a domain the company asked for cover its sign-ins; sso:domain-remove withdraws it; both on record',
    async () => {
      const domain = `cli-${randomBytes(3).toString('hex')}.example`;
      const pgdata = path.join(dataDir, 'pgdata');
      // The company's admin asked for the domain (as the settings page stores it).
      let db = await openDb({ kind: 'pglite', dataDir: pgdata });
      try {
        await db.query(
          `INSERT INTO company_sso (company_id, issuer, client_id, client_secret_sealed, metadata)
           VALUES ($1, 'https://login.example.com', 'registry', 'v1.sealed', '{"issuer":"https://login.example.com"}')`,
          [company().id],
        );
        await db.query('INSERT INTO company_sso_domains (domain, company_id) VALUES ($1, $2)', [domain, company().id]);
        expect(await createSignInRepository(db).ssoForDomain(domain)).toBeUndefined();
      } finally {
        await db.close();
      }
      const unknown = await admin(dataDir, 'sso:domain-approve', '--company', company().id, '--domain', `other-${domain}`);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain(`The company has not asked for the domain other-${domain}.`);
      const approved = await admin(dataDir, 'sso:domain-approve', '--company', company().id, '--domain', domain.toUpperCase(), '--json');
      expect(approved.code, approved.stderr).toBe(0);
      expect(JSON.parse(approved.stdout)).toEqual({ company_id: company().id, domain, status: 'approved' });
      db = await openDb({ kind: 'pglite', dataDir: pgdata });
      try {
        expect((await createSignInRepository(db).ssoForDomain(domain))?.companyId).toBe(company().id);
      } finally {
        await db.close();
      }
      const removed = await admin(dataDir, 'sso:domain-remove', '--company', company().id, '--domain', domain);
      expect(removed.code, removed.stderr).toBe(0);
      expect(removed.stdout).toContain(`Removed ${domain}`);
      const missing = await admin(dataDir, 'sso:domain-remove', '--company', company().id);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('Missing --domain.');
      db = await openDb({ kind: 'pglite', dataDir: pgdata });
      try {
        expect(await createSignInRepository(db).ssoForDomain(domain)).toBeUndefined();
        expect(
          await db.query(
            "SELECT action, actor_name, target_name FROM audit_events WHERE company_id = $1 AND action LIKE 'company.sso_domain_%' ORDER BY created_at",
            [company().id],
          ),
        ).toEqual([
          { action: 'company.sso_domain_approved', actor_name: 'command line', target_name: domain },
          { action: 'company.sso_domain_removed', actor_name: 'command line', target_name: domain },
        ]);
      } finally {
        await db.close();
      }
    },
    5 * SPAWN_TIMEOUT,
  );
});
