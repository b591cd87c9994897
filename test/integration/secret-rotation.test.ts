import { createHmac, timingSafeEqual } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { enqueueWebhookEvent } from '../../src/domain/webhooks/webhook-service';
import { createTestContext, dbKind, TEST_HASH_KEY, type TestContext } from '../harness';
import { runAdmin } from '../processes';
import { startReceiver } from '../webhooks/receiver';
import { companyWithPeople, PASSWORD, signedIn, totpCode, totpKeys, WebClient } from '../web/web-client';

// Keys rotate without downtime (issue 53): SESSION_SECRET and ENCRYPTION_KEY as lists (the first
// signs or seals, every one verifies or opens), `admin reseal`, and a webhook's secret rotated with
// two signatures for 24 hours. "A restart" is a new app on the same database with other settings.

const OLD_SESSION = 'old-session-secret-0123456789abcdef0123456789';
const NEW_SESSION = 'new-session-secret-0123456789abcdef0123456789';
const OLD_KEY = 'old-encryption-key-0123456789abcdef0123456789';
const NEW_KEY = 'new-encryption-key-0123456789abcdef0123456789';
const SPAWN_TIMEOUT = 90_000;
/** Each describe starts an app and then restarts it on the same database (several apps): slow on a busy machine. */
const SETUP_TIMEOUT = 300_000;
const TEST_TIMEOUT = 600_000;

let t = Date.now();
const clock = { now: () => t };

/**
 * `npm run admin -- <args> --json` against the context's PostgreSQL schema, as an operator runs it
 * beside the server; on the in-memory embedded database (which no other process can open) the
 * same service function the command calls.
 */
async function admin(ctx: TestContext, env: Record<string, string>, args: string[], inProcess: () => Promise<unknown>): Promise<unknown> {
  if (dbKind() !== 'postgres') return inProcess();
  const r = await runAdmin(
    {
      DATABASE_URL: ctx.config.databaseUrl!,
      DB_SEARCH_PATH: ctx.config.dbSearchPath!,
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      LOG_LEVEL: 'silent',
      ...env,
    },
    [...args, '--json'],
    SPAWN_TIMEOUT,
  );
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('SESSION_SECRET rotation', () => {
  let before: TestContext;
  let during: TestContext | undefined;
  let after: TestContext | undefined;
  beforeAll(async () => {
    before = await createTestContext({ SESSION_SECRET: OLD_SESSION });
  }, SETUP_TIMEOUT);
  afterAll(async () => {
    await after?.close();
    await during?.close();
    await before?.close();
  }, SETUP_TIMEOUT);

  it(
    'keeps people signed in when the new secret is listed first (new,old); removing the old one then signs out cookies it signed',
    async () => {
      const c = await companyWithPeople(before);
      const web = await signedIn(before, c.member.email);
      const cookies = new Map(web.cookies);
      expect((await web.get('/claims')).statusCode).toBe(200);

      during = await createTestContext({ SESSION_SECRET: `${NEW_SESSION},${OLD_SESSION}` }, { restartOf: before });
      const carried = new WebClient(during.app);
      for (const [k, v] of cookies) carried.cookies.set(k, v);
      const page = await carried.get('/claims');
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(c.member.email);
      // A sign-in now gets a cookie signed by the new secret, which the old secret alone would refuse.
      const fresh = await signedIn(during, c.admin.email);
      expect((await fresh.get('/claims')).statusCode).toBe(200);

      after = await createTestContext({ SESSION_SECRET: NEW_SESSION }, { restartOf: before });
      const old = new WebClient(after.app);
      for (const [k, v] of cookies) old.cookies.set(k, v);
      expect((await old.get('/claims')).headers.location).toMatch(/^\/login/u);
      const kept = new WebClient(after.app);
      for (const [k, v] of fresh.cookies) kept.cookies.set(k, v);
      expect((await kept.get('/claims')).statusCode).toBe(200);
    },
    TEST_TIMEOUT,
  );
});

describe('ENCRYPTION_KEY rotation and admin reseal', () => {
  let first: TestContext;
  const restarts: TestContext[] = [];
  beforeAll(async () => {
    first = await createTestContext({ ENCRYPTION_KEY: OLD_KEY }, clock);
  }, SETUP_TIMEOUT);
  afterAll(async () => {
    for (const r of restarts.reverse()) await r.close();
    await first?.close();
  }, SETUP_TIMEOUT);
  const restart = async (key: string) => {
    const r = await createTestContext({ ENCRYPTION_KEY: key }, { ...clock, restartOf: first });
    restarts.push(r);
    return r;
  };

  it(
    'TOTP sign-in works under (new,old), and after `admin reseal` under the new key alone; reseal is audited',
    async () => {
      const c = await companyWithPeople(first);
      // The member sets up a second factor: the key is sealed with the old ENCRYPTION_KEY.
      const web = new WebClient(first.app);
      await web.signIn(c.member.email, PASSWORD, t);
      await web.get('/settings/security');
      const setup = await web.post('/settings/security/second-factor');
      const key = /id="totp-key"[^>]*value="([A-Z2-7 ]+)"/u.exec(setup.body)![1]!.replaceAll(' ', '');
      expect((await web.post('/settings/security/second-factor/confirm', { code: totpCode(key, t) })).statusCode).toBe(200);
      totpKeys.set(c.member.email.toLowerCase(), key);
      const sealedBefore = await first.deps.db.query<{ s: string }>('SELECT totp_secret_sealed AS s FROM users WHERE id = $1', [
        c.member.id,
      ]);

      // The new key alone cannot open it: a sign-in with the right code fails (before any reseal).
      const newOnly = await restart(NEW_KEY);
      t += 60_000;
      await expect(new WebClient(newOnly.app).signIn(c.member.email, PASSWORD, t)).rejects.toThrow();

      const both = await restart(`${NEW_KEY},${OLD_KEY}`);
      t += 60_000;
      const signedInDuring = await new WebClient(both.app).signIn(c.member.email, PASSWORD, t);
      expect(signedInDuring.statusCode).toBe(303);

      const out = await admin(both, { ENCRYPTION_KEY: `${NEW_KEY},${OLD_KEY}` }, ['reseal'], () => both.deps.reseal());
      expect(out).toMatchObject(dbKind() === 'postgres' ? { totp_keys_resealed: 1, sso_secrets_resealed: 0 } : { totp: 1, sso: 0 });
      const sealedAfter = await first.deps.db.query<{ s: string }>('SELECT totp_secret_sealed AS s FROM users WHERE id = $1', [
        c.member.id,
      ]);
      expect(sealedAfter[0]!.s).not.toBe(sealedBefore[0]!.s);
      const events = await first.deps.db.query<{ actor_name: string; target_name: string }>(
        "SELECT actor_name, target_name FROM audit_events WHERE action = 'keys.resealed'",
      );
      expect(events).toEqual([
        { actor_name: 'command line', target_name: '1 TOTP keys, 0 SSO client secrets sealed again with the first key' },
      ]);

      // The old key removed: the second factor still works.
      const resealed = await restart(NEW_KEY);
      t += 60_000;
      expect((await new WebClient(resealed.app).signIn(c.member.email, PASSWORD, t)).statusCode).toBe(303);
    },
    TEST_TIMEOUT,
  );
});

/** What a receiver does during a rotation: accept the delivery if any v1 signature verifies with its secret. */
function verifiesWith(secret: string, header: string | undefined, body: string): boolean {
  const m = /^t=(\d+)((?:,v1=[0-9a-f]{64})+)$/u.exec(header ?? '');
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${body}`).digest();
  return m[2]!
    .split(',v1=')
    .slice(1)
    .some((v) => timingSafeEqual(expected, Buffer.from(v, 'hex')));
}

describe('Webhook secret rotation', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ WEBHOOK_ALLOW_PRIVATE: 'true' }, clock);
  }, SETUP_TIMEOUT);
  afterAll(async () => ctx?.close(), SETUP_TIMEOUT);

  it(
    'from Settings, Webhooks: the new secret shown once after the redirect; both signatures for 24 hours, then only the new; audited',
    async () => {
      t = Date.now();
      const receiver = await startReceiver(() => 204);
      try {
        const c = await companyWithPeople(ctx);
        const web = await signedIn(ctx, c.admin.email);
        await web.get('/settings/webhooks');
        const created = await web.submit('/settings/webhooks', { url: receiver.url });
        const oldSecret = /id="webhook-secret"[^>]*value="(whsec_[A-Za-z0-9_-]+)"/u.exec(created.body)![1]!;
        const [endpoint] = await ctx.deps.webhooks.listEndpoints(c.id);
        const list = await web.get('/settings/webhooks');
        expect(list.body).toContain(`action="/settings/webhooks/${endpoint!.id}/rotate-secret"`);

        // Without the CSRF token, or as a member, or for another company's endpoint: nothing changes.
        expect((await web.post(`/settings/webhooks/${endpoint!.id}/rotate-secret`, {}, { csrf: null })).statusCode).toBe(403);
        const member = await signedIn(ctx, c.member.email);
        await member.get('/claims');
        expect((await member.post(`/settings/webhooks/${endpoint!.id}/rotate-secret`)).statusCode).toBe(403);
        const other = await companyWithPeople(ctx, 'Other');
        const otherWeb = await signedIn(ctx, other.admin.email);
        await otherWeb.get('/settings/webhooks');
        expect((await otherWeb.post(`/settings/webhooks/${endpoint!.id}/rotate-secret`)).statusCode).toBe(404);

        const rotated = await web.post(`/settings/webhooks/${endpoint!.id}/rotate-secret`);
        expect(rotated.statusCode).toBe(303);
        expect(rotated.headers.location).toBe('/settings/webhooks');
        const shown = await web.get('/settings/webhooks');
        expect(shown.body).toContain('Signing secret rotated');
        const newSecret = /id="webhook-secret"[^>]*value="(whsec_[A-Za-z0-9_-]+)"/u.exec(shown.body)![1]!;
        expect(newSecret).not.toBe(oldSecret);
        // Shown once: the next visit shows no secret.
        const again = await web.get('/settings/webhooks');
        expect(again.body).not.toContain(newSecret);
        expect(again.body).not.toContain('Signing secret rotated');

        const events = await ctx.deps.db.query<{ actor_name: string; target_name: string }>(
          "SELECT actor_name, target_name FROM audit_events WHERE company_id = $1 AND action = 'webhook.secret_rotated'",
          [c.id],
        );
        expect(events).toEqual([{ actor_name: c.admin.email, target_name: receiver.url }]);

        // Within the 24 hours: two signatures, the new one first; a receiver with either secret accepts.
        t += 23 * 3_600_000;
        await ctx.deps.repos.transaction((tx) => enqueueWebhookEvent(tx, { companyId: c.id, type: 'import.completed', payload: {} }));
        const [during] = await receiver.waitFor(1);
        const header = String(during!.headers['claims-signature']);
        expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/u);
        expect(header.startsWith(`t=${Math.floor(t / 1000)},`)).toBe(true);
        expect(verifiesWith(newSecret, header, during!.body)).toBe(true);
        expect(verifiesWith(oldSecret, header, during!.body)).toBe(true);

        // After the 24 hours: only the new one.
        t += 2 * 3_600_000;
        await ctx.deps.repos.transaction((tx) => enqueueWebhookEvent(tx, { companyId: c.id, type: 'import.completed', payload: {} }));
        const [, later] = await receiver.waitFor(2);
        const laterHeader = String(later!.headers['claims-signature']);
        expect(laterHeader).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/u);
        expect(verifiesWith(newSecret, laterHeader, later!.body)).toBe(true);
        expect(verifiesWith(oldSecret, laterHeader, later!.body)).toBe(false);
      } finally {
        await receiver.close();
      }
    },
    TEST_TIMEOUT,
  );

  it(
    'from the command line (webhook:rotate-secret --webhook ID): the new secret printed once, audited, the old one still signs',
    async () => {
      // The command line signs with the real clock's time: the service's clock is the real one here.
      t = Date.now();
      const receiver = await startReceiver(() => 204);
      try {
        const c = await ctx.newCompany();
        const created = await ctx.deps.webhooks.createEndpoint(c.id, receiver.url);
        const out = (await admin(ctx, {}, ['webhook:rotate-secret', '--webhook', created.id], () =>
          ctx.deps.webhooks.rotateSecret(null, created.id),
        )) as { id: string; company_id: string; secret: string; previous_valid_until: string };
        expect(out).toMatchObject({ id: created.id, company_id: c.id, secret: expect.stringMatching(/^whsec_/u) });
        expect(out.secret).not.toBe(created.secret);
        const events = await ctx.deps.db.query<{ actor_name: string }>(
          "SELECT actor_name FROM audit_events WHERE company_id = $1 AND action = 'webhook.secret_rotated'",
          [c.id],
        );
        expect(events).toEqual([{ actor_name: 'command line' }]);
        await ctx.deps.repos.transaction((tx) => enqueueWebhookEvent(tx, { companyId: c.id, type: 'import.completed', payload: {} }));
        const [d] = await receiver.waitFor(1);
        const header = String(d!.headers['claims-signature']);
        expect(verifiesWith(out.secret, header, d!.body)).toBe(true);
        expect(verifiesWith(created.secret, header, d!.body)).toBe(true);
      } finally {
        await receiver.close();
      }
    },
    TEST_TIMEOUT,
  );
});
