import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, apiError, claimBody, createTestContext, type Company, type TestContext } from '../harness';
import { csv, docNumber, multipart, postImport, validRow } from '../import-helpers';
import { companyWithPeople, signedIn } from '../web/web-client';

/**
 * Identity checks are disclosures (DECISIONS, "Access control, abuse limits and the audit trail"):
 * every mismatch, from a submission, an import row, a dry run or the dashboard, is an entry of the
 * company's look-up log (kind identity_check), part of the person's subject access export; a
 * company is told at most IDENTITY_MISMATCHES_PER_HOUR an hour; a file giving one document more
 * than 3 dates of birth is refused whole before any row is processed.
 */
const HOUR = 3_600_000;
let clock = Date.now();
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ IDENTITY_MISMATCHES_PER_HOUR: '100' }, { now: () => clock });
});
afterAll(async () => ctx?.close());

const DOB = '1980-04-12';
const OTHER_DOB = '1981-05-13';
const identityCheck = {
  id: expect.any(String),
  kind: 'identity_check',
  vehicle_registration: null,
  claim_id: null,
  result_count: 1,
  purpose: null,
  created_at: expect.any(String),
};

const lookups = async (c: Company) =>
  (await ctx.app.inject({ method: 'GET', url: '/api/v1/lookups?limit=100', headers: c.auth })).json().data as { kind: string }[];
const checksOf = async (c: Company) => (await lookups(c)).filter((l) => l.kind === 'identity_check');
const submit = (c: Company, number: string, dateOfBirth: string, more: { type: string; number: string }[] = []) =>
  ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims',
    headers: c.auth,
    payload: claimBody({}, { date_of_birth: dateOfBirth, id_documents: [{ type: 'passport', number }, ...more] }),
  });
/** POST /api/v1/claims/import?dry_run=true with the file. */
async function dryRun(c: Company, content: string) {
  const body = await multipart(content);
  return ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims/import?dry_run=true',
    headers: { ...c.auth, 'content-type': body.contentType },
    payload: body.payload,
  });
}
/** A person on record, submitted by `owner`: their passport number. */
async function person(owner: Company, dateOfBirth = DOB): Promise<string> {
  const number = docNumber();
  expect((await submit(owner, number, dateOfBirth)).statusCode).toBe(201);
  return number;
}

describe('every mismatch is an identity_check entry of the look-up log', () => {
  it('of a submission: another date of birth, and documents of two persons', async () => {
    const [a, b] = [await ctx.newCompany('Owner'), await ctx.newCompany('Prober')];
    const [p, q] = [await person(a), await person(a)];
    const wrong = await submit(b, p, OTHER_DOB);
    expect(wrong.statusCode).toBe(422);
    expect(Object.keys(wrong.json().errors)).toEqual(['client.date_of_birth']);
    expect(await lookups(b)).toEqual([identityCheck]);
    const two = await submit(b, p, DOB, [{ type: 'passport', number: q }]);
    expect(two.statusCode).toBe(422);
    expect(await checksOf(b)).toHaveLength(2);
    // The owner's log has nothing of it, and the prober's entry names no claim, plate or person.
    expect(await checksOf(a)).toEqual([]);
    const stored = await ctx.deps.db.query<{ client_id: string | null; claim_id: string | null; vehicle_registration: string | null }>(
      `SELECT client_id, claim_id, vehicle_registration FROM lookups WHERE company_id = $1`,
      [b.id],
    );
    expect(stored).toEqual([
      { client_id: null, claim_id: null, vehicle_registration: null },
      { client_id: null, claim_id: null, vehicle_registration: null },
    ]);
  });

  it('of an import row and of a dry run (which writes nothing else)', async () => {
    const [a, b] = [await ctx.newCompany('Owner'), await ctx.newCompany('Importer')];
    const p = await person(a);
    const file = csv([validRow({ id_number: p, date_of_birth: OTHER_DOB }), validRow()]);
    const dry = await dryRun(b, file);
    expect(dry.statusCode, dry.body).toBe(200);
    expect(dry.json()).toMatchObject({
      dry_run: true,
      imported: 1,
      failed: 1,
      errors: [{ row: 2, messages: { date_of_birth: [expect.any(String)] } }],
    });
    expect(await lookups(b)).toEqual([identityCheck]);
    const real = await postImport(ctx.app, b.auth, file);
    expect(real.statusCode, real.body).toBe(200);
    expect(real.json()).toMatchObject({ imported: 1, failed: 1 });
    expect(await checksOf(b)).toHaveLength(2);
  });

  it('of the dashboard: a claim entered by hand and a file checked only', async () => {
    const a = await ctx.newCompany('Owner');
    const b = await companyWithPeople(ctx, 'Dashboard');
    const p = await person(a);
    const web = await signedIn(ctx, b.member.email);
    await web.get('/claims/new');
    const body = claimBody();
    const entered = await web.post('/claims', {
      'client.first_name': 'Ona',
      'client.last_name': 'Petraitė',
      'client.date_of_birth': OTHER_DOB,
      'client.id_documents.0.type': 'passport',
      'client.id_documents.0.number': p,
      'client.id_documents.1.type': '',
      'client.id_documents.1.number': '',
      claim_date: ctx.deps.today(),
      vehicle_registration: body.vehicle_registration,
      claim_type: 'theft',
      amount: '100',
      is_at_fault: 'false',
      status: 'filed',
    });
    expect(entered.statusCode).toBe(422);
    expect(await lookups(b)).toEqual([identityCheck]);
    await web.get('/imports');
    const checked = await web.postMultipart(
      '/imports',
      { _csrf: web.lastCsrf, check_only: 'on' },
      { name: 'check.csv', content: csv([validRow({ id_number: p, date_of_birth: OTHER_DOB })]) },
    );
    expect(checked.statusCode, checked.body).toBe(200);
    expect(await checksOf(b)).toHaveLength(2);
  });

  it("is part of the person's subject access export, naming the company told", async () => {
    const [a, b] = [await ctx.newCompany('Owner'), await ctx.newCompany('Told')];
    const p = await person(a);
    expect((await submit(b, p, OTHER_DOB)).statusCode).toBe(422);
    const exported = await ctx.deps.registry.subjectExport({ dateOfBirth: DOB, idType: 'passport', idNumber: p });
    expect(exported.lookups).toContainEqual({
      company_name: b.name,
      kind: 'identity_check',
      claim_id: null,
      created_at: expect.any(String),
    });
  });
});

describe('the hourly budget (IDENTITY_MISMATCHES_PER_HOUR 100)', () => {
  it('refuses the 101st mismatch of the hour and, until the hour has passed, every submission and import row of the company', async () => {
    clock = Date.parse('2031-01-01T10:00:00Z');
    try {
      const [a, b] = [await ctx.newCompany('Owner'), await ctx.newCompany('Prober')];
      // 101 persons on record, then a file giving each another date of birth.
      const numbers = Array.from({ length: 101 }, () => docNumber());
      const made = await postImport(ctx.app, a.auth, csv(numbers.map((n) => validRow({ id_number: n, date_of_birth: DOB }))));
      expect(made.json()).toMatchObject({ imported: 101, failed: 0 });
      const probe = await postImport(ctx.app, b.auth, csv(numbers.map((n) => validRow({ id_number: n, date_of_birth: OTHER_DOB }))));
      expect(probe.statusCode, probe.body).toBe(200);
      const errors: { row: number; messages: Record<string, string[]> }[] = probe.json().errors;
      expect(errors).toHaveLength(101);
      expect(errors.slice(0, 100).every((e) => Object.keys(e.messages).join() === 'date_of_birth')).toBe(true);
      const limitedMessage = errors[100]!.messages.row![0]!;
      expect(errors[100]).toEqual({ row: 102, messages: { row: [expect.stringContaining('identity mismatches')] } });
      expect(await checksOf(b)).toHaveLength(100);
      // The operator is told once, by the service itself.
      const limitedEvents = async () =>
        (await ctx.deps.repos.audit.list({ companyId: b.id, action: 'company.identity_checks_limited', limit: 10 })).map((e) => ({
          action: e.action,
          actor: e.actor,
          target: e.target,
        }));
      expect(await limitedEvents()).toEqual([
        {
          action: 'company.identity_checks_limited',
          actor: { type: 'system', id: null, name: expect.any(String) },
          target: { type: 'company', id: b.id, name: null },
        },
      ]);

      // Past the budget: every submission of the company, a mismatch or not, and every import row.
      const mismatch = await submit(b, numbers[0]!, OTHER_DOB);
      expect(mismatch.statusCode).toBe(429);
      expect(mismatch.json()).toEqual(apiError('identity_check_limited', limitedMessage));
      expect((await submit(b, docNumber(), DOB)).statusCode).toBe(429);
      const rows = await postImport(ctx.app, b.auth, csv([validRow(), validRow()]));
      expect(rows.json()).toMatchObject({ imported: 0, failed: 2, errors: [{ row: 2, messages: { row: [limitedMessage] } }, { row: 3 }] });
      expect(await checksOf(b)).toHaveLength(100);
      expect(await limitedEvents()).toHaveLength(1);
      // Another company is not limited.
      expect((await submit(a, docNumber(), DOB)).statusCode).toBe(201);

      // Once the hour has passed.
      clock += HOUR + 1000;
      expect((await submit(b, docNumber(), DOB)).statusCode).toBe(201);
    } finally {
      clock = Date.now();
    }
  });

  it('refuses a company taken past it by checks made elsewhere: a mismatch at once, any submission within a second', async () => {
    clock = Date.parse('2031-02-01T10:00:00Z');
    try {
      const [a, b, c] = [await ctx.newCompany('Owner'), await ctx.newCompany('Prober'), await ctx.newCompany('Other prober')];
      const numbers = Array.from({ length: 100 }, () => docNumber());
      await postImport(ctx.app, a.auth, csv(numbers.map((n) => validRow({ id_number: n, date_of_birth: DOB }))));
      // Each submits while within its budget, then an import uses the budget up: checks that the
      // submissions of this server did not make.
      for (const prober of [b, c]) {
        expect((await submit(prober, docNumber(), DOB)).statusCode).toBe(201);
        const probe = await postImport(ctx.app, prober.auth, csv(numbers.map((n) => validRow({ id_number: n, date_of_birth: OTHER_DOB }))));
        expect(probe.json()).toMatchObject({ imported: 0, failed: 100 });
      }
      // A mismatch is decided on the counts of that moment.
      expect((await submit(b, numbers[0]!, OTHER_DOB)).statusCode).toBe(429);
      // Any submission, within a second.
      clock += 1000;
      expect((await submit(c, docNumber(), DOB)).statusCode).toBe(429);
      expect(await checksOf(c)).toHaveLength(100);
      expect(await checksOf(b)).toHaveLength(100);
    } finally {
      clock = Date.now();
    }
  });
});

describe('a file giving one document more than 3 dates of birth', () => {
  it('is refused whole (422 naming the row of the fourth) before any row is processed: a dry run of 36,500 dates of birth', async () => {
    const [a, b] = [await ctx.newCompany('Owner'), await ctx.newCompany('Guesser')];
    const p = await person(a, '1990-07-15');
    const rows = Array.from({ length: 36_500 }, (_, i) => validRow({ id_number: p, date_of_birth: addDays('1925-01-01', i) }));
    const res = await dryRun(b, csv(rows));
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual(
      apiError('validation_failed', expect.stringContaining('Row 5 '), { file: [expect.stringContaining('Row 5 ')] }),
    );
    // Nothing was processed: no mismatch told, no import.
    expect(await lookups(b)).toEqual([]);
  });

  it('is refused whole by a real import too, and three dates of birth are not', async () => {
    const b = await ctx.newCompany('Importer');
    const n = docNumber();
    const dates = ['1970-01-01', '1970-01-02', '1970-01-03', '1970-01-04'];
    const four = await postImport(ctx.app, b.auth, csv(dates.map((d) => validRow({ id_number: n, date_of_birth: d }))));
    expect(four.statusCode).toBe(422);
    expect(four.json().errors.file[0]).toMatch(/^Row 5 /u);
    const imports = (await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: b.auth })).json().data;
    expect(imports).toEqual([]);
    const other = docNumber();
    const three = await postImport(ctx.app, b.auth, csv(dates.slice(0, 3).map((d) => validRow({ id_number: other, date_of_birth: d }))));
    expect(three.statusCode).toBe(200);
    expect(three.json()).toMatchObject({ imported: 1, failed: 2 });
  });
});
