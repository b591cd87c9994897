import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { AuditAction } from '../../src/domain/audit/audit';
import { companyPrincipal, createTestContext, plate, type TestContext } from '../harness';
import { csv, validRow } from '../import-helpers';
import { companyWithPeople, PASSWORD, signedIn, validClaimForm, WebClient } from './web-client';

// Every dashboard form that creates something answers 303 with a Location (post/redirect/get):
// the page it names shows the new item, and what may be shown only once (a token's value, a
// signing secret, a first password, a reset link) the first time only; loading it again creates
// nothing more.

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ APP_TIMEZONE: 'UTC' });
});
afterAll(async () => ctx.close());

const tokenValue = (html: string) => /id="token-value"[^>]*value="(csk_[0-9A-Za-z]{36})"/u.exec(html)?.[1];
const secretOf = (html: string) => /id="webhook-secret"[^>]*value="(whsec_[A-Za-z0-9_-]+)"/u.exec(html)?.[1];
const firstPassword = (html: string) => /id="first-password"[^>]*value="([^"]+)"/u.exec(html)?.[1];
const resetLink = (html: string) => /id="reset-link"[^>]*value="http:\/\/[^/]+(\/reset\/[A-Za-z0-9_-]+)"/u.exec(html)?.[1];

const events = async (companyId: string, action: AuditAction) => ctx.deps.repos.audit.list({ companyId, action, limit: 100 });
/** Every session row's data, as a copy of the database would have it. */
const sessionRows = async () =>
  (await ctx.deps.db.query<{ data: string }>('SELECT data::text AS data FROM web_sessions')).map((r) => r.data).join('\n');

/** A 303 with a Location on this site: its path. */
function redirected(res: { statusCode: number; headers: Record<string, unknown> }): string {
  expect(res.statusCode).toBe(303);
  const location = res.headers.location;
  expect(location).toMatch(/^\/[^/]/u);
  return location as string;
}

async function operatorClient() {
  const email = `operator-${randomBytes(3).toString('hex')}@registry.example`;
  await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
  return signedIn(ctx, email);
}

describe('Create Token', () => {
  it('redirects to a page that shows the value once; a reload shows it no more and creates nothing', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/tokens');
    const location = redirected(await web.post('/settings/tokens', { name: 'Reloaded', scopes: ['search'], expires: '7' }));
    const row = (await ctx.deps.tokens.list(c.id)).find((t) => t.name === 'Reloaded');
    expect(location).toBe(`/settings/tokens?created=${row!.id}`);
    const waiting = await sessionRows();

    const shown = await web.get(location);
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('Token created');
    const token = tokenValue(shown.body)!;
    expect(token).toBeTruthy();
    // While it waited in the session, a copy of the sessions table did not show it.
    expect(waiting).not.toContain(token);
    expect(waiting).not.toContain(token.slice(4));

    const again = await web.get(location);
    expect(again.statusCode).toBe(200);
    expect(again.body).not.toContain(token);
    expect(again.body).toContain('The token “Reloaded” was created. Its value was shown once and cannot be shown again');
    expect(again.body).toContain(`csk_…${token.slice(-4)}`);
    expect((await ctx.deps.tokens.list(c.id)).filter((t) => t.name === 'Reloaded')).toHaveLength(1);
    expect((await events(c.id, 'token.created')).filter((e) => e.target?.name === 'Reloaded')).toHaveLength(1);
    // Another admin of another company cannot read it through the address either.
    const other = await companyWithPeople(ctx);
    const otherPage = await (await signedIn(ctx, other.admin.email)).get(location);
    expect(otherPage.body).not.toContain('Reloaded');
  });
});

describe('Create Webhook', () => {
  it('redirects to a page that shows the signing secret once; a reload creates nothing', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/webhooks');
    const location = redirected(await web.post('/settings/webhooks', { url: 'https://prg-hooks.example.net/registry' }));
    const [endpoint] = await ctx.deps.webhooks.listEndpoints(c.id);
    expect(location).toBe(`/settings/webhooks?created=${endpoint!.id}`);
    const waiting = await sessionRows();
    const shown = await web.get(location);
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('Webhook created');
    const secret = secretOf(shown.body)!;
    expect(secret).toBeTruthy();
    expect(waiting).not.toContain(secret);

    const again = await web.get(location);
    expect(again.statusCode).toBe(200);
    expect(secretOf(again.body)).toBeUndefined();
    expect(again.body).not.toContain(secret);
    expect(again.body).toContain('Its signing secret was shown once and cannot be shown again');
    expect(again.body).toContain('https://prg-hooks.example.net/registry');
    expect(await ctx.deps.webhooks.listEndpoints(c.id)).toHaveLength(1);
    expect(await events(c.id, 'webhook.created')).toHaveLength(1);
  });
});

describe('Add person (an admin, Settings › People)', () => {
  it('redirects to a page that shows a generated first password once; a reload creates nobody', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/people');
    const email = `prg-${randomBytes(3).toString('hex')}@x.example`;
    const location = redirected(await web.post('/settings/people', { email, role: 'member', password: '' }));
    const person = (await ctx.deps.companies.listUsers(c.id)).find((p) => p.email === email)!;
    expect(location).toBe(`/settings/people?added=${person.id}`);
    const shown = await web.get(location);
    expect(shown.statusCode).toBe(200);
    const password = firstPassword(shown.body)!;
    expect(password.length).toBeGreaterThanOrEqual(20);

    const again = await web.get(location);
    expect(again.statusCode).toBe(200);
    expect(firstPassword(again.body)).toBeUndefined();
    expect(again.body).not.toContain(password);
    expect(again.body).toContain(`${email} was added. Their first password was shown once`);
    expect((await ctx.deps.companies.listUsers(c.id)).filter((p) => p.email === email)).toHaveLength(1);
    expect((await events(c.id, 'person.created')).filter((e) => e.target?.name === email)).toHaveLength(1);
    await new WebClient(ctx.app).signIn(email, password);
  });

  it('with a chosen password, redirects to the list that names the new person', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/people');
    const email = `chosen-${randomBytes(3).toString('hex')}@x.example`;
    const location = redirected(await web.post('/settings/people', { email, role: 'viewer', password: 'A-chosen-password-2026' }));
    for (let i = 0; i < 2; i++) {
      const page = await web.get(location);
      expect(page.body).toContain('The person was added.');
      expect(page.body).toContain(email);
      expect(page.body).not.toContain('A-chosen-password-2026');
    }
    expect((await events(c.id, 'person.created')).filter((e) => e.target?.name === email)).toHaveLength(1);
  });
});

describe('Reset password (an admin, Settings › People)', () => {
  it('redirects to a page that shows the link once; a reload makes no second link', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/people');
    const location = redirected(await web.post(`/settings/people/${c.member.id}/reset`));
    expect(location).toBe(`/settings/people?reset=${c.member.id}`);
    const waiting = await sessionRows();
    const shown = await web.get(location);
    expect(shown.statusCode).toBe(200);
    const link = resetLink(shown.body)!;
    expect(link).toBeTruthy();
    expect(waiting).not.toContain(link.slice('/reset/'.length));

    const again = await web.get(location);
    expect(again.statusCode).toBe(200);
    expect(resetLink(again.body)).toBeUndefined();
    expect(again.body).not.toContain(link);
    expect(again.body).toContain(`A reset link for ${c.member.email} was made. It was shown once and cannot be shown again`);
    expect(await events(c.id, 'person.password_changed')).toHaveLength(1);
    // The one link made works.
    const person = new WebClient(ctx.app);
    expect((await person.get(link)).statusCode).toBe(200);
    expect((await person.post(link, { new_password: 'after the reload 2026', confirm_password: 'after the reload 2026' })).statusCode).toBe(
      303,
    );
  });
});

describe("the operator's forms", () => {
  it('Create a company and Add a person redirect; the first password shows once; reloads create nothing', async () => {
    const op = await operatorClient();
    await op.get('/operator');
    const name = `PRG Insurance ${randomBytes(3).toString('hex')}`;
    const companyLocation = redirected(await op.post('/operator/companies', { name }));
    const companyId = /^\/operator\/companies\/([0-9a-f-]{36})\?created=1$/u.exec(companyLocation)![1]!;
    for (let i = 0; i < 2; i++) {
      const page = await op.get(companyLocation);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(name);
    }
    expect((await ctx.deps.companies.listCompanies()).filter((co) => co.name === name)).toHaveLength(1);
    expect(await events(companyId, 'company.created')).toHaveLength(1);

    const email = `first-${randomBytes(3).toString('hex')}@prg.example`;
    const location = redirected(await op.post(`/operator/companies/${companyId}/people`, { email, role: 'admin', password: '' }));
    const [person] = await ctx.deps.companies.listUsers(companyId);
    expect(location).toBe(`/operator/companies/${companyId}?added=${person!.id}`);
    const shown = await op.get(location);
    const password = firstPassword(shown.body)!;
    expect(password).toBeTruthy();
    expect(shown.body).toContain(`href="/operator/companies/${companyId}"`);
    const again = await op.get(location);
    expect(again.statusCode).toBe(200);
    expect(again.body).not.toContain(password);
    expect(again.body).toContain(`${email} was added. Their first password was shown once`);
    expect(await ctx.deps.companies.listUsers(companyId)).toHaveLength(1);
    expect(await events(companyId, 'person.created')).toHaveLength(1);
  });
});

describe('claims, imports and plate files', () => {
  it('Enter a claim redirects to the claim; a reload saves no second claim', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/claims/new');
    const location = redirected(await web.post('/claims', validClaimForm(ctx.deps.today(), { amount: '80' })));
    for (let i = 0; i < 2; i++) expect((await web.get(location)).body).toContain('The claim was saved.');
    expect((await ctx.deps.claims.list(companyPrincipal(c), { limit: 10 })).data).toHaveLength(1);
  });

  it('an import, and an import confirmed again, redirect to their results; reloads start no other import', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/imports');
    const file = { name: 'prg.csv', content: csv([validRow(), validRow()]) };
    const location = redirected(await web.postMultipart('/imports', { _csrf: web.lastCsrf }, file));
    expect(location).toMatch(/^\/imports\/[0-9a-f-]{36}$/u);
    for (let i = 0; i < 2; i++) expect((await web.get(location)).statusCode).toBe(200);
    const imports = async () => (await ctx.deps.imports.list(companyPrincipal(c), { limit: 10 })).data;
    expect(await imports()).toHaveLength(1);

    await web.get('/imports');
    expect(redirected(await web.postMultipart('/imports', { _csrf: web.lastCsrf }, file))).toBe('/imports/confirm');
    await web.get('/imports/confirm');
    const confirmed = redirected(await web.post('/imports/confirm', { action: 'import' }));
    expect(confirmed).toMatch(/^\/imports\/[0-9a-f-]{36}$/u);
    expect(confirmed).not.toBe(location);
    for (let i = 0; i < 2; i++) expect((await web.get(confirmed)).statusCode).toBe(200);
    // The confirmation page, loaded again, has nothing left to import.
    expect(redirected(await web.get('/imports/confirm'))).toBe('/imports');
    expect(await imports()).toHaveLength(2);
  });

  it('a file of plates redirects to its check; a reload submits no second one', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/lookups/batch');
    const location = redirected(
      await web.postMultipart(
        '/lookups/batch',
        { _csrf: web.lastCsrf, purpose: 'Reload check' },
        { name: 'plates.csv', content: `vehicle_registration\n${plate()}\n` },
      ),
    );
    expect(location).toMatch(/^\/lookups\/batch\/[0-9a-f-]{36}$/u);
    for (let i = 0; i < 2; i++) expect((await web.get(location)).statusCode).toBe(200);
    const rows = await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM lookup_batches WHERE company_id = $1', [c.id]);
    expect(rows[0]!.n).toBe(1);
  });
});

describe('one-time values and the session', () => {
  it('a value kept for one page is not shown on another, and the form posted twice shows each value once', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/tokens');
    const first = redirected(await web.post('/settings/tokens', { name: 'One', scopes: ['search'], expires: '7' }));
    await web.get('/settings/tokens');
    const second = redirected(await web.post('/settings/tokens', { name: 'Two', scopes: ['search'], expires: '7' }));
    // The plain list shows neither value.
    const list = await web.get('/settings/tokens');
    expect(tokenValue(list.body)).toBeUndefined();
    const two = tokenValue((await web.get(second)).body)!;
    const one = tokenValue((await web.get(first)).body)!;
    expect(one).toBeTruthy();
    expect(two).toBeTruthy();
    expect(one).not.toBe(two);
    expect(tokenValue((await web.get(first)).body)).toBeUndefined();
    expect(tokenValue((await web.get(second)).body)).toBeUndefined();
  });
});
