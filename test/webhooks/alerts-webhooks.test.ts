import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, submitClaim, type TestContext } from '../harness';
import { csv, plate, postImport, validRow } from '../import-helpers';
import { startReceiver, verifySignature } from './receiver';

/**
 * The `alerts.created` webhook event, through the outbox and the deliverer to a real receiver that
 * checks the signature: one delivery per told company per stored claim (claims submitted together
 * included) or completed import, at most 100 alerts each.
 */
let ctx: TestContext;
const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '0,0,0,0,0', WEBHOOK_TIMEOUT_SECONDS: '5' });
});
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});
afterAll(async () => ctx?.close());

async function receiver() {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

describe('alerts.created', () => {
  it('delivers a stored claim’s alerts to the told company, signed, in the import events’ envelope', async () => {
    const [told, owner] = [await ctx.newCompany('Hooked'), await ctx.newCompany('Hook owner')];
    const r = await receiver();
    const endpoint = await ctx.deps.webhooks.createEndpoint(told.id, r.url);
    const ownerHook = await receiver();
    await ctx.deps.webhooks.createEndpoint(owner.id, ownerHook.url);
    const p = plate();
    const mine = await submitClaim(ctx, told, { vehicle_registration: p });
    const fresh = await submitClaim(ctx, owner, { vehicle_registration: p });

    const [got] = await r.waitFor(1);
    expect(verifySignature(endpoint.secret, got!.headers['claims-signature'] as string, got!.body)).toBe(true);
    expect(got!.headers['claims-event']).toBe('alerts.created');
    const event = JSON.parse(got!.body);
    const listed = (await ctx.app.inject({ method: 'GET', url: '/api/v1/alerts', headers: told.auth })).json().data;
    expect(event).toEqual({
      id: expect.any(String),
      type: 'alerts.created',
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/u),
      data: { alerts: listed, count: 1 },
    });
    expect(Object.keys(event)).toEqual(['id', 'type', 'created_at', 'data']);
    expect(event.data.alerts[0]).toMatchObject({ kind: 'match', claim_id: mine.id, matched_claim: fresh });
    await expect
      .poll(() => ctx.deps.webhooks.listDeliveries(told.id))
      .toEqual([expect.objectContaining({ event_type: 'alerts.created', status: 'delivered' })]);
    // The company that stored the claim was told nothing.
    expect(await ctx.deps.webhooks.listDeliveries(owner.id)).toEqual([]);
    expect(ownerHook.received).toEqual([]);
  });

  it('sends one event per stored claim to the told company, also for claims submitted at the same time', async () => {
    const [told, owner] = [await ctx.newCompany('Told at once'), await ctx.newCompany('Submitting at once')];
    const r = await receiver();
    await ctx.deps.webhooks.createEndpoint(told.id, r.url);
    const plates = [plate(), plate(), plate(), plate()];
    for (const p of plates) await submitClaim(ctx, told, { vehicle_registration: p });
    // Sent at once: the first is written alone, the others together in one write.
    const stored = await Promise.all(plates.map((p) => submitClaim(ctx, owner, { vehicle_registration: p })));

    const events = (await r.waitFor(4)).map((g) => JSON.parse(g.body));
    expect(events.map((e) => e.data.count)).toEqual([1, 1, 1, 1]);
    expect(events.map((e) => e.data.alerts[0].matched_claim.id).sort()).toEqual(stored.map((c) => c.id).sort());
    await expect.poll(() => ctx.deps.webhooks.listDeliveries(told.id)).toHaveLength(4);
  });

  it('sends a completed import’s alerts at most 100 a delivery, one event per told company', async () => {
    const [told, alsoTold, importer] = [await ctx.newCompany('Many'), await ctx.newCompany('Also'), await ctx.newCompany('Bulk')];
    const r = await receiver();
    const endpoint = await ctx.deps.webhooks.createEndpoint(told.id, r.url);
    const r2 = await receiver();
    await ctx.deps.webhooks.createEndpoint(alsoTold.id, r2.url);
    const plates = Array.from({ length: 101 }, () => plate());
    const first = await postImport(ctx.app, told.auth, csv(plates.map((p) => validRow({ vehicle_registration: p }))));
    expect(first.json()).toMatchObject({ imported: 101 });
    const x = plate();
    await submitClaim(ctx, alsoTold, { vehicle_registration: x });
    const second = await postImport(ctx.app, importer.auth, csv([...plates, x].map((p) => validRow({ vehicle_registration: p }))));
    expect(second.json()).toMatchObject({ imported: 102 });

    // Also import.completed of the told company's own import.
    const got = (await r.waitFor(3)).filter((g) => g.headers['claims-event'] === 'alerts.created');
    const events = got.map((g) => JSON.parse(g.body));
    expect(events).toHaveLength(2);
    for (const g of got) expect(verifySignature(endpoint.secret, g.headers['claims-signature'] as string, g.body)).toBe(true);
    expect(events.map((e) => e.data.count).sort()).toEqual([1, 100]);
    expect(events.map((e) => e.data.alerts.length).sort()).toEqual([1, 100]);
    const ids = new Set(events.flatMap((e) => e.data.alerts.map((a: { id: string }) => a.id)));
    expect(ids.size).toBe(101);
    const [other] = await r2.waitFor(1);
    expect(JSON.parse(other!.body)).toMatchObject({ type: 'alerts.created', data: { count: 1 } });
    // Nothing more: the told company's own import told nobody (there was nothing of another company then).
    await expect.poll(() => ctx.deps.webhooks.listDeliveries(told.id)).toHaveLength(3);
    expect((await ctx.deps.webhooks.listDeliveries(alsoTold.id)).map((d) => d.event_type)).toEqual(['alerts.created']);
  });

  it('delivers a status change alert to the company that looked at the claim', async () => {
    const [owner, looker] = [await ctx.newCompany('Status owner'), await ctx.newCompany('Status looker')];
    const r = await receiver();
    const endpoint = await ctx.deps.webhooks.createEndpoint(looker.id, r.url);
    const p = plate();
    const claim = await submitClaim(ctx, owner, { vehicle_registration: p });
    await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: looker.auth,
      payload: { vehicle_registration: p },
    });
    const res = await ctx.app.inject({
      method: 'PATCH',
      url: `/api/v1/claims/${claim.id}/status`,
      headers: owner.auth,
      payload: { status: 'closed' },
    });
    expect(res.statusCode).toBe(200);
    const [got] = await r.waitFor(1);
    expect(verifySignature(endpoint.secret, got!.headers['claims-signature'] as string, got!.body)).toBe(true);
    expect(JSON.parse(got!.body).data).toEqual({
      alerts: [
        expect.objectContaining({
          kind: 'status_changed',
          claim_id: null,
          from: 'filed',
          to: 'closed',
          matched_claim: { ...claim, status: 'closed' },
        }),
      ],
      count: 1,
    });
  });
});
