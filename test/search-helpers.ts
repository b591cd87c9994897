import pino from 'pino';
import { expect } from 'vitest';

import { claimBody, type Company, type TestContext } from './harness';

/** A pino logger that keeps its records (parsed) in `records`, at info and above. */
export function recordingLogger() {
  const records: { level: number; msg: string; [key: string]: unknown }[] = [];
  const lines: string[] = [];
  const logger = pino(
    { level: 'info' },
    {
      write(line: string) {
        lines.push(line);
        records.push(JSON.parse(line) as (typeof records)[number]);
      },
    },
  );
  return { logger, records, lines, warnings: (msg: string) => records.filter((r) => r.level === 40 && r.msg.includes(msg)) };
}

/** A claim submitted through the API with a body of its own (its person's documents are returned too). */
export async function submit(ctx: TestContext, company: Company, overrides: Record<string, unknown> = {}) {
  const body = claimBody(overrides);
  const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: body });
  expect(res.statusCode, res.body).toBe(201);
  const claim = res.json().data as { id: string; vehicle_registration: string };
  return { ...claim, person: { date_of_birth: body.client.date_of_birth, id_documents: body.client.id_documents } };
}

type Claimed = Awaited<ReturnType<typeof submit>>;

/** The three cross-company reads, each asserted 200; each answers the ids of the claims it found. */
export function searches(ctx: TestContext) {
  const ids = (res: { statusCode: number; body: string; json(): { data: unknown } }, pick: (data: never) => { id: string }[]) => {
    expect(res.statusCode, res.body).toBe(200);
    return pick(res.json().data as never).map((c) => c.id);
  };
  return {
    async byPlate(company: Company, plate: string): Promise<string[]> {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims/search-by-plate',
        headers: company.auth,
        payload: { vehicle_registration: plate },
      });
      return ids(res, (data: { id: string }[]) => data);
    },
    async byPerson(company: Company, claim: Claimed): Promise<string[]> {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims/search-by-person',
        headers: company.auth,
        payload: claim.person,
      });
      return ids(res, (data: { id: string }[]) => data);
    },
    async matches(owner: Company, claimId: string): Promise<string[]> {
      const res = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${claimId}/matches`, headers: owner.auth });
      return ids(res, (data: { matches: { id: string }[] }) => data.matches);
    },
  };
}
