import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Need } from '../../src/domain/access/access';
import { createTestContext, type TestContext } from '../harness';
import { PASSWORD, signedIn, WebClient } from './web-client';

/**
 * Roles on the dashboard: each role (and the operator) against each dashboard page and action,
 * driven by the needs the routes state where they are registered (`config.access`, recorded in
 * `app.accessTable`). A company person below the role a page needs gets a 403 page naming that
 * role; at or above it, never that page. The app refuses to start with a route that states no
 * need (test/api/access-registry.test.ts), so a new route is in this matrix at once.
 */
let ctx: TestContext;
const clients = {} as Record<'viewer' | 'member' | 'admin' | 'operator', WebClient>;
/** `METHOD /pattern` of every dashboard route, with the need it states. */
let dashboard: [string, Need][];
beforeAll(async () => {
  ctx = await createTestContext();
  dashboard = ctx.app.accessTable.filter((e) => e.surface === 'dashboard').map((e) => [`${e.method} ${e.url}`, e.need]);
  const operatorEmail = `operator-${randomUUID().slice(0, 8)}@registry.example`;
  await ctx.deps.companies.createUser({ companyId: null, email: operatorEmail, password: PASSWORD, role: 'operator' });
  clients.operator = await signedIn(ctx, operatorEmail);
  const company = await ctx.newCompany('Roles');
  const tag = randomUUID().slice(0, 8);
  for (const role of ['viewer', 'member', 'admin'] as const) {
    const email = `${role}-${tag}@roles.example`;
    await ctx.deps.companies.createUser({ companyId: company.id, email, password: PASSWORD, role });
    clients[role] = await signedIn(ctx, email);
  }
});
afterAll(() => ctx.close());

const RANK: Record<string, number> = { viewer: 0, member: 1, admin: 2 };

/** A 403 of access.ts (not the CSRF check's, which refuses an allowed form sent without its token). */
const refusedAccess = (res: { statusCode: number; body: string }) =>
  res.statusCode === 403 && /role is needed|This page is for the operator|This page belongs to a company/u.test(res.body);

const request = (web: WebClient, route: string) => {
  const [method, pattern] = route.split(' ') as [string, string];
  const url = pattern.replace(/:\w+/gu, randomUUID()).replace('*', 'no-such-page');
  // No CSRF token: an allowed form is refused for that instead, and changes nothing.
  return method === 'GET' ? web.get(url) : web.post(url, {}, { csrf: null });
};

describe('the needs the dashboard routes state', () => {
  it('cover every dashboard page, each stating a role, the operator, any signed-in person or public', () => {
    expect(dashboard.length).toBeGreaterThan(40);
    for (const [route, need] of dashboard) {
      expect(['public', 'signed-in', 'viewer', 'member', 'admin', 'operator'], route).toContain(need);
    }
  });

  it('refuses each company page and action to the roles below the one it needs, with a 403 page naming it', async () => {
    for (const [route, needed] of dashboard) {
      if (typeof needed !== 'string' || !(needed in RANK)) continue;
      for (const role of ['viewer', 'member', 'admin'] as const) {
        const res = await request(clients[role], route);
        const refusedForRole = res.statusCode === 403 && res.body.includes(`The ${needed} role is needed`);
        if (RANK[role]! < RANK[needed]!) {
          expect(refusedForRole, `${route} as ${role}: ${res.statusCode}`).toBe(true);
          expect(res.body).toContain(`you are a ${role}`);
        } else {
          expect(refusedForRole, `${route} as ${role}`).toBe(false);
        }
      }
    }
  });

  it('keeps company people out of the operator pages, and the operator out of the company pages', async () => {
    for (const [route, needed] of dashboard) {
      if (needed === 'operator') {
        const res = await request(clients.admin, route);
        expect(res.statusCode, route).toBe(403);
        expect(res.body, route).toContain('This page is for the operator of the service.');
        expect(refusedAccess(await request(clients.operator, route)), `${route} as the operator`).toBe(false);
      } else if (typeof needed === 'string' && needed in RANK) {
        const res = await request(clients.operator, route);
        if (route === 'GET /') expect(res.headers.location, route).toBe('/operator');
        else expect(res.body, `${route} as the operator`).toContain('This page belongs to a company.');
      }
    }
  });

  it('opens the pages of any signed-in person to every role and the operator, and sends a signed-out visitor to sign in', async () => {
    const anonymous = new WebClient(ctx.app);
    for (const [route, needed] of dashboard) {
      if (needed !== 'signed-in') continue;
      for (const who of ['viewer', 'member', 'admin', 'operator'] as const) {
        expect(refusedAccess(await request(clients[who], route)), `${route} as ${who}`).toBe(false);
      }
      const res = await request(anonymous, route);
      expect([303, 403], route).toContain(res.statusCode);
      if (res.statusCode === 303) expect(res.headers.location, route).toMatch(/^\/login/u);
    }
  });

  it('shows a viewer neither the claim entry nor the plate file in the navigation, and an admin the settings of tokens', async () => {
    const viewerHome = (await clients.viewer.get('/')).body;
    expect(viewerHome).not.toContain('href="/claims/new"');
    expect(viewerHome).toContain('href="/settings/people"');
    const adminHome = (await clients.admin.get('/')).body;
    expect(adminHome).toContain('href="/claims/new"');
    expect(adminHome).toMatch(/<a href="\/settings\/tokens"[^>]*>Settings<\/a>/u);
  });
});
