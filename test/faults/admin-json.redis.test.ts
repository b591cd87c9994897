import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openDb } from '../../src/db/db';
import { TEST_HASH_KEY } from '../harness';
import { runAdmin } from '../processes';

/**
 * `npm run admin -- ... --json` with REDIS_URL set: stdout holds exactly one JSON value (scripts
 * parse it), and whatever the process logs (the queue connection closing, say) goes to stderr.
 */
const redisUrl = process.env.TEST_REDIS_URL!;
const schema = `test_admin_${randomBytes(5).toString('hex')}`;

const admin = (...args: string[]) =>
  runAdmin(
    {
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: `test-admin-${randomBytes(3).toString('hex')}`,
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      LOG_LEVEL: 'info',
    },
    args,
  );

describe('admin command line with REDIS_URL', () => {
  beforeAll(async () => {
    const db = await openDb({ kind: 'postgres', url: process.env.TEST_DATABASE_URL!, poolSize: 1 });
    await db.exec(`CREATE SCHEMA ${schema}`);
    await db.close();
  });
  afterAll(async () => {
    const db = await openDb({ kind: 'postgres', url: process.env.TEST_DATABASE_URL!, poolSize: 1 });
    await db.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await db.close();
  });

  it('prints exactly one JSON value on stdout with --json', async () => {
    const name = `Redis ${randomBytes(3).toString('hex')}`;
    const res = await admin('company:create', '--name', name, '--json');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout.trim().split('\n'), res.stdout).toHaveLength(1);
    expect(JSON.parse(res.stdout)).toEqual({ id: expect.any(String), name });
    const list = await admin('company:list', '--json');
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ name })]);
  }, 120_000);

  it('webhook:create prints the secret once; webhook:list shows endpoints and deliveries, never the secret', async () => {
    const company = JSON.parse((await admin('company:create', '--name', `Hooks ${randomBytes(3).toString('hex')}`, '--json')).stdout) as {
      id: string;
    };
    const made = await admin('webhook:create', '--company', company.id, '--url', 'https://hooks.example.com/claims', '--json');
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout.trim().split('\n')).toHaveLength(1);
    const hook = JSON.parse(made.stdout);
    expect(hook).toEqual({
      id: expect.any(String),
      url: 'https://hooks.example.com/claims',
      secret: expect.stringMatching(/^whsec_/u),
      created_at: expect.any(String),
    });

    const listed = await admin('webhook:list', '--company', company.id, '--json');
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).not.toContain(hook.secret);
    expect(JSON.parse(listed.stdout)).toEqual({ endpoints: [{ id: hook.id, url: hook.url, created_at: hook.created_at }], deliveries: [] });

    const refused = await admin('webhook:create', '--company', company.id, '--url', 'http://hooks.example.com/claims', '--json');
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('The url must use https.');
  }, 180_000);
});
