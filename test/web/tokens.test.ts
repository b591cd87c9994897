import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, signedIn } from './web-client';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

const tokenValue = (html: string) => /id="token-value"[^>]*value="(csk_[0-9A-Za-z]{36})"/u.exec(html)?.[1];

describe('Settings › API Tokens', () => {
  it('is reached through navigation labelled exactly "Settings" and "API Tokens"', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    const home = await web.get('/');
    expect(home.body).toMatch(/<a href="\/settings\/tokens"[^>]*>Settings<\/a>/u);
    const page = await web.get('/settings/tokens');
    expect(page.body).toMatch(/<a href="\/settings\/tokens" aria-current="page">API Tokens<\/a>/u);
    expect(page.body).toMatch(/<button type="submit" class="button">Create Token<\/button>/u);
  });

  it('creates a token that works at once, shows its value once, lists it without the value, and a revoked token gets 401', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/tokens');
    const posted = await web.post('/settings/tokens', { name: 'Claims system (production)', scopes: ['claims:read'], expires: '90' });
    expect(posted.statusCode).toBe(303);
    const created = await web.get(posted.headers.location as string);
    expect(created.statusCode).toBe(200);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.body).toContain('It will not be shown again');
    expect(created.body).toContain('data-copy="token-value"');
    const token = tokenValue(created.body)!;
    expect(token).toBeTruthy();

    const api = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${token}` } });
    expect(api.statusCode).toBe(200);

    const list = await web.get('/settings/tokens');
    expect(list.body).toContain('Claims system (production)');
    expect(list.body).not.toContain(token);
    expect(list.body).not.toContain(token.slice(4, 20));
    const row = (await ctx.deps.tokens.list(c.id)).find((t) => t.name === 'Claims system (production)')!;
    expect(row.last_used_at).not.toBeNull();

    const confirm = await web.get(`/settings/tokens/${row.id}/revoke`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('Revoke “Claims system (production)”?');
    expect(confirm.body).not.toContain(token);
    const revoked = await web.post(`/settings/tokens/${row.id}/revoke`);
    expect(revoked.statusCode).toBe(303);
    expect(revoked.headers.location).toBe('/settings/tokens?revoked=1');
    const after = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${token}` } });
    expect(after.statusCode).toBe(401);
    expect((await web.get('/settings/tokens')).body).toContain('Revoked');
  });

  it('asks for a name', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/tokens');
    const res = await web.post('/settings/tokens', { name: '   ' });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('id="token-name-error">The name field is required.');
    expect(res.body).not.toMatch(/csk_[A-Za-z0-9_-]{43}/u);
  });

  it('escapes what people type', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/tokens');
    await web.post('/settings/tokens', { name: '<script>alert(1)</script>', scopes: 'search', expires: '7' });
    const list = await web.get('/settings/tokens');
    expect(list.body).not.toContain('<script>alert(1)</script>');
    expect(list.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('lists each token by its last 4 characters (csk_…abcd), never the value; a token made before they were kept shows —', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/tokens');
    const token = tokenValue((await web.submit('/settings/tokens', { name: 'Four', scopes: ['search'], expires: '7' })).body)!;
    // One made before the column existed: only its hash and prefix were kept.
    await ctx.deps.db.query(
      `INSERT INTO api_tokens (company_id, name, token_hash, token_prefix, scopes) VALUES ($1, 'Older', $2, 'csk_abcdef', ARRAY['search'])`,
      [c.id, 'f'.repeat(64)],
    );
    const list = (await web.get('/settings/tokens')).body;
    const row = (name: string) => list.slice(list.indexOf(`data-label="Name">${name}<`)).split('</tr>')[0]!;
    expect(row('Four')).toContain(`<code data-last4>csk_…${token.slice(-4)}</code>`);
    expect(row('Older')).toContain('<span aria-hidden="true">—</span><span class="visually-hidden">Not kept</span>');
    expect(list).not.toContain(token);
    expect(list).not.toContain(token.slice(-8));
    expect(list).not.toContain(token.slice(4, 12));
  });

  it('creates a token whose name is in use, and says that another active token has it', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/tokens');
    const first = await web.submit('/settings/tokens', { name: 'Claims system', scopes: ['search'], expires: '7' });
    expect(first.body).not.toContain('data-name-in-use');
    const posted = await web.post('/settings/tokens', { name: 'claims system', scopes: ['search'], expires: '7' });
    expect(posted.statusCode).toBe(303);
    const shown = await web.get(posted.headers.location as string);
    expect(tokenValue(shown.body)).toBeTruthy();
    expect(shown.body).toContain(
      'The token was created, but another active token is also called “claims system”. To tell them apart, look at the last 4 characters',
    );
    // A reload still says so (the value is gone).
    const again = await web.get(posted.headers.location as string);
    expect(tokenValue(again.body)).toBeUndefined();
    expect(again.body).toContain('another active token is also called “claims system”');
    expect((await ctx.deps.tokens.list(c.id)).filter((t) => t.name.toLowerCase() === 'claims system')).toHaveLength(2);

    // Two in use: counted. A revoked one of the same name does not count.
    const third = await web.submit('/settings/tokens', { name: 'Claims System', scopes: ['search'], expires: '7' });
    expect(third.body).toContain('The token was created, but 2 other active tokens are also called “Claims System”.');
    for (const t of await ctx.deps.tokens.list(c.id)) if (t.name !== 'Claims System') await ctx.deps.tokens.revoke(t.id, c.id);
    const fourth = await web.submit('/settings/tokens', { name: 'Claims system', scopes: ['search'], expires: '7' });
    expect(fourth.body).toContain('another active token is also called “Claims system”');
    const fifth = await web.submit('/settings/tokens', { name: 'Another name', scopes: ['search'], expires: '7' });
    expect(tokenValue(fifth.body)).toBeTruthy();
    expect(fifth.body).not.toContain('data-name-in-use');
  });
});
