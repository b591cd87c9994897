import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, submitClaim, type Company, type TestContext } from '../harness';
import { plate } from '../import-helpers';
import { companyWithPeople, signedIn } from '../web/web-client';

/**
 * Status change alerts: when the owner changes a claim's status, each other company whose look-ups
 * (or alerts) returned the claim in the last 90 days gets one alert, in the same list and event.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/u;
const statusAlerts = async (company: Company) => {
  const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/alerts', headers: company.auth });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().data as { kind: string }[]).filter((a) => a.kind === 'status_changed');
};
const setStatus = (company: Company, id: string, status: string) =>
  ctx.app.inject({ method: 'PATCH', url: `/api/v1/claims/${id}/status`, headers: company.auth, payload: { status } });
const plateSearch = (company: Company, vehicle_registration: string) =>
  ctx.app.inject({ method: 'POST', url: '/api/v1/claims/search-by-plate', headers: company.auth, payload: { vehicle_registration } });

describe('status change alerts', () => {
  it("tell the companies whose look-ups or alerts returned the claim, with from, to and the claim's new status", async () => {
    const [owner, looker, earlier, stranger] = [
      await ctx.newCompany('Owner'),
      await ctx.newCompany('Looker'),
      await ctx.newCompany('Earlier'),
      await ctx.newCompany('Stranger'),
    ];
    const p = plate();
    await submitClaim(ctx, earlier, { vehicle_registration: p }); // told of the owner's claim by a match alert
    const claim = await submitClaim(ctx, owner, { vehicle_registration: p });
    expect((await plateSearch(looker, p)).statusCode).toBe(200);
    expect((await plateSearch(stranger, plate())).statusCode).toBe(200); // another plate: never returned the claim

    const res = await setStatus(owner, claim.id, 'disputed');
    expect(res.statusCode, res.body).toBe(200);
    for (const told of [looker, earlier]) {
      expect(await statusAlerts(told)).toEqual([
        {
          id: expect.any(String),
          kind: 'status_changed',
          claim_id: null,
          matched_claim: { ...claim, status: 'disputed' },
          from: 'filed',
          to: 'disputed',
          created_at: expect.stringMatching(RFC3339),
        },
      ]);
    }
    expect(await statusAlerts(stranger)).toEqual([]);
    expect(await statusAlerts(owner)).toEqual([]);
    // The owner sees who was told.
    const who = (await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${claim.id}/lookups`, headers: owner.auth })).json().data;
    expect(
      who
        .filter((l: { kind: string }) => l.kind === 'alert')
        .map((l: { company_name: string }) => l.company_name)
        .sort(),
    ).toEqual(
      // Earlier: its match alert and this one; Looker: this one.
      [earlier.name, earlier.name, looker.name].sort(),
    );
  });

  it('tells nobody when the same status is set again, and tells again at the next change', async () => {
    const [owner, looker] = [await ctx.newCompany('Owner same'), await ctx.newCompany('Looker same')];
    const p = plate();
    const claim = await submitClaim(ctx, owner, { vehicle_registration: p });
    await plateSearch(looker, p);
    expect((await setStatus(owner, claim.id, 'filed')).statusCode).toBe(200);
    expect(await statusAlerts(looker)).toEqual([]);
    await setStatus(owner, claim.id, 'settled');
    await setStatus(owner, claim.id, 'settled');
    await setStatus(owner, claim.id, 'closed');
    expect((await statusAlerts(looker)).map((a) => [(a as unknown as { from: string }).from, (a as unknown as { to: string }).to])).toEqual(
      [
        ['settled', 'closed'],
        ['filed', 'settled'],
      ],
    );
  });

  it('tells nobody whose look-ups of the claim are older than 90 days, nor for a refused change', async () => {
    const [owner, looker, other] = [await ctx.newCompany('Owner old'), await ctx.newCompany('Looker old'), await ctx.newCompany('Other')];
    const p = plate();
    const claim = await submitClaim(ctx, owner, { vehicle_registration: p });
    await plateSearch(looker, p);
    await ctx.deps.lookupJournal.flush();
    await ctx.deps.db.query(`UPDATE lookups SET created_at = now() - interval '91 days' WHERE company_id = $1`, [looker.id]);
    await setStatus(owner, claim.id, 'disputed');
    expect(await statusAlerts(looker)).toEqual([]);

    // 89 days ago is within the period.
    await ctx.deps.db.query(`UPDATE lookups SET created_at = now() - interval '89 days' WHERE company_id = $1`, [looker.id]);
    expect((await setStatus(other, claim.id, 'closed')).statusCode).toBe(403);
    expect(await statusAlerts(looker)).toEqual([]);
    await setStatus(owner, claim.id, 'closed');
    expect(await statusAlerts(looker)).toHaveLength(1);
  });

  it('are made for a change in the dashboard too', async () => {
    const c = await companyWithPeople(ctx, 'Dashboard owner');
    const looker = await ctx.newCompany('Dashboard looker');
    const p = plate();
    const claim = await submitClaim(ctx, c, { vehicle_registration: p });
    await plateSearch(looker, p);
    const web = await signedIn(ctx, c.member.email);
    await web.get(`/claims/${claim.id}`);
    expect((await web.post(`/claims/${claim.id}/status`, { status: 'under_investigation' })).statusCode).toBe(303);
    expect(await statusAlerts(looker)).toEqual([expect.objectContaining({ from: 'filed', to: 'under_investigation' })]);
  });
});
