import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PAGE_ROLES } from '../../src/web/page-roles';
import { createTestContext, type TestContext } from '../harness';
import { PASSWORD, signedIn, type WebClient } from './web-client';

/**
 * Roles on the dashboard: each role against each dashboard page and action, driven by the one
 * table (src/web/page-roles.ts). A company person below the role a page needs gets a 403 page
 * naming that role; at or above it, never that page. A dashboard route without an entry fails
 * the first test.
 */
let ctx: TestContext;
const clients = {} as Record<'viewer' | 'member' | 'admin', WebClient>;
beforeAll(async () => {
  ctx = await createTestContext();
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

describe('the page role table', () => {
  it('has an entry for every dashboard route', () => {
    expect(ctx.app.dashboardRoutes.length).toBeGreaterThan(40);
    for (const route of ctx.app.dashboardRoutes)
      expect(PAGE_ROLES[route], `${route} needs an entry in src/web/page-roles.ts`).toBeDefined();
  });

  it('refuses each company page and action to the roles below the one it needs, with a 403 page naming it', async () => {
    for (const [route, needed] of Object.entries(PAGE_ROLES)) {
      if (needed === 'public' || needed === 'operator' || !ctx.app.dashboardRoutes.includes(route)) continue;
      const [method, pattern] = route.split(' ') as [string, string];
      const url = pattern.replace(/:\w+/gu, randomUUID());
      for (const role of ['viewer', 'member', 'admin'] as const) {
        const web = clients[role];
        // No CSRF token: an allowed form is refused for that instead, and changes nothing.
        const res = method === 'GET' ? await web.get(url) : await web.post(url, {}, { csrf: null });
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

  it('keeps company people out of the operator pages', async () => {
    for (const [route, needed] of Object.entries(PAGE_ROLES)) {
      if (needed !== 'operator' || !ctx.app.dashboardRoutes.includes(route)) continue;
      const [method, pattern] = route.split(' ') as [string, string];
      const url = pattern.replace(/:\w+/gu, randomUUID());
      const res = method === 'GET' ? await clients.admin.get(url) : await clients.admin.post(url, {}, { csrf: null });
      expect(res.statusCode, route).toBe(403);
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
