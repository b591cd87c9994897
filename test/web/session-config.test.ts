import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { loadConfig } from '../../src/config';
import { resolveSessionSecrets, StartupError } from '../../src/deps';
import { createTestContext, type TestContext } from '../harness';
import { WebClient } from './web-client';

describe('SESSION_SECRET', () => {
  it('is generated once into DATA_DIR in embedded mode and reused', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-secret-'));
    const config = loadConfig({ DATA_DIR: dir });
    const [first, ...others] = resolveSessionSecrets(config);
    expect(others).toEqual([]);
    expect(first!.length).toBeGreaterThanOrEqual(32);
    expect(resolveSessionSecrets(config)).toEqual([first]);
    expect(fs.readFileSync(path.join(dir, 'session-secret.key'), 'utf8').trim()).toBe(first);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('must be set when DATABASE_URL is set, with a clear startup error', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' });
    expect(() => resolveSessionSecrets(config)).toThrow(StartupError);
    expect(() => resolveSessionSecrets(config)).toThrow(/SESSION_SECRET must be set when DATABASE_URL is set/u);
  });

  it('is used as given when set', () => {
    const secret = 'a-session-secret-of-at-least-32-characters';
    expect(resolveSessionSecrets(loadConfig({ SESSION_SECRET: secret, DATABASE_URL: 'postgres://x@h/db' }))).toEqual([secret]);
  });

  it('may list several, newest first, each at least 32 characters', () => {
    const [a, b] = ['a-new-session-secret-of-at-least-32-chars', 'an-old-session-secret-of-at-least-32-chars'];
    expect(resolveSessionSecrets(loadConfig({ SESSION_SECRET: `${a}, ${b}`, DATABASE_URL: 'postgres://x@h/db' }))).toEqual([a, b]);
    expect(() => resolveSessionSecrets(loadConfig({ SESSION_SECRET: `${a},short`, DATABASE_URL: 'postgres://x@h/db' }))).toThrow(
      /SESSION_SECRET must be one secret, or several separated by commas, each at least 32 characters/u,
    );
  });
});

describe("behind a TLS proxy (TRUST_PROXY=127.0.0.1, the proxy's address)", () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ TRUST_PROXY: '127.0.0.1' });
  });
  afterAll(async () => ctx.close());

  it('names the session cookie __Host-, marks it Secure and sends HSTS when the request came over HTTPS', async () => {
    const res = await new WebClient(ctx.app, { 'x-forwarded-proto': 'https' }).get('/login');
    const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
    expect(cookies.find((c) => c.startsWith('claims_session='))).toBeUndefined();
    const cookie = cookies.find((c) => c.startsWith('__Host-claims_session='))!;
    expect(cookie).toMatch(/; Path=\/(;|$)/u);
    expect(cookie).not.toMatch(/Domain=/iu);
    expect(res.headers['strict-transport-security']).toBe('max-age=31536000');
    expect(cookie).toMatch(/; Secure/u);
    expect(cookie).toMatch(/; HttpOnly/u);
    expect(cookie).toMatch(/; SameSite=Lax/u);
  });

  it('does not mark it Secure for plain HTTP', async () => {
    const res = await new WebClient(ctx.app).get('/login');
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('claims_session='))!;
    expect(cookie).not.toMatch(/; Secure/u);
    expect(res.headers['strict-transport-security']).toBeUndefined();
    expect(([] as string[]).concat(res.headers['set-cookie'] ?? []).join()).not.toContain('__Host-');
  });
});

describe('the API docs page and Bull Board', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ TRUST_PROXY: '127.0.0.1' });
  });
  afterAll(async () => ctx.close());

  it("carry the dashboard's security headers, and HSTS over TLS", async () => {
    for (const url of ['/docs', '/docs/static/index.html']) {
      const res = await ctx.app.inject({ method: 'GET', url, headers: { 'x-forwarded-proto': 'https' } });
      expect(res.statusCode, url).toBeLessThan(400);
      expect(res.headers['x-frame-options'], url).toBe('DENY');
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
      expect(res.headers['referrer-policy'], url).toBe('same-origin');
      expect(res.headers['content-security-policy'], url).toContain("frame-ancestors 'none'");
      expect(res.headers['content-security-policy'], url).toContain("script-src 'self';");
      expect(res.headers['strict-transport-security'], url).toBe('max-age=31536000');
    }
    const api = await ctx.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-forwarded-proto': 'https' } });
    expect(api.headers['strict-transport-security']).toBe('max-age=31536000');
    const plain = await ctx.app.inject({ method: 'GET', url: '/docs' });
    expect(plain.headers['strict-transport-security']).toBeUndefined();
  });

  it("believe X-Forwarded-Proto only from the trusted proxy's address", async () => {
    const other = await createTestContext({ TRUST_PROXY: '10.9.8.7' });
    try {
      const res = await other.app.inject({ method: 'GET', url: '/login', headers: { 'x-forwarded-proto': 'https' } });
      expect(res.headers['strict-transport-security']).toBeUndefined();
      expect(([] as string[]).concat(res.headers['set-cookie'] ?? []).join()).not.toContain('__Host-');
    } finally {
      await other.close();
    }
  });
});
