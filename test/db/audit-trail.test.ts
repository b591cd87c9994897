import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AUDIT_ACTIONS, CLI_ACTOR, recordAudit, type AuditEventInput } from '../../src/domain/audit/audit';
import { createTestContext, type Company, type TestContext } from '../harness';

/**
 * The audit trail's table: an event is written with the act's own transaction handle, so it
 * commits with the act or not at all; it is append-only; lists are newest first per company.
 */
let ctx: TestContext;
let company: Company;
let other: Company;
beforeAll(async () => {
  ctx = await createTestContext();
  company = await ctx.newCompany('Audited');
  other = await ctx.newCompany('Other');
});
afterAll(() => ctx.close());

const event = (companyId: string | null, over: Partial<AuditEventInput> = {}): AuditEventInput => ({
  companyId,
  action: 'company.settings_changed',
  actor: CLI_ACTOR,
  target: { type: 'company', id: companyId, name: 'x' },
  ip: null,
  requestId: null,
  ...over,
});

describe('audit events', () => {
  it('commit with the act, and vanish with a rolled-back one', async () => {
    await ctx.deps.repos.transaction((tx) => recordAudit(tx, event(company.id, { action: 'token.created' })));
    await expect(
      ctx.deps.repos.transaction(async (tx) => {
        await recordAudit(tx, event(company.id, { action: 'token.revoked' }));
        throw new Error('the act failed');
      }),
    ).rejects.toThrow('the act failed');
    const listed = await ctx.deps.repos.audit.list({ companyId: company.id, limit: 10 });
    // Newest first; before them, the company's creation and its first token (the harness made them).
    expect(listed.map((e) => e.action)).toEqual(['token.created', 'token.created', 'company.created']);
    expect(listed[0]).toMatchObject({ company_id: company.id, actor: CLI_ACTOR, ip: null, request_id: null });
    expect(listed[0]!.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/u);
  });

  it('are listed newest first, per company and per action, with keyset positions', async () => {
    for (const action of ['person.created', 'person.removed', 'person.created'] as const) {
      await ctx.deps.repos.transaction((tx) => recordAudit(tx, event(other.id, { action })));
    }
    const all = (await ctx.deps.repos.audit.list({ companyId: other.id, limit: 10 })).slice(0, 3);
    expect(all.map((e) => e.action)).toEqual(['person.created', 'person.removed', 'person.created']);
    const created = await ctx.deps.repos.audit.list({ companyId: other.id, action: 'person.created', limit: 10 });
    expect(created.map((e) => e.id)).toEqual([all[0]!.id, all[2]!.id]);
    const after = await ctx.deps.repos.audit.list({ companyId: other.id, after: all[0]!.position, limit: 2 });
    expect(after.map((e) => e.id)).toEqual([all[1]!.id, all[2]!.id]);
    const everyCompany = await ctx.deps.repos.audit.list({ companyId: null, limit: 100 });
    expect(everyCompany.map((e) => e.id)).toEqual(expect.arrayContaining(all.map((e) => e.id)));
  });

  it('cannot be changed', async () => {
    await ctx.deps.repos.transaction((tx) => recordAudit(tx, event(company.id, { action: 'import.cancelled' })));
    await expect(
      ctx.deps.db.query("UPDATE audit_events SET actor_name = 'someone else' WHERE action = 'import.cancelled'"),
    ).rejects.toThrow(/append-only/u);
    const [e] = await ctx.deps.repos.audit.list({ companyId: company.id, action: 'import.cancelled', limit: 1 });
    expect(e!.actor.name).toBe('command line');
  });

  it('name every action of DECISIONS', () => {
    expect(AUDIT_ACTIONS).toEqual(
      expect.arrayContaining(['token.created', 'company.suspended', 'data.purged', 'subject.exported', 'queue.job_retried']),
    );
  });
});
