import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type Company, type TestContext } from '../harness';
import { csv, postImportOverSocket, postLookupBatch, validRow, waitForImport } from '../import-helpers';
import { PACE_AFTER_REQUEST_MS, type PaceClock } from '../../src/upload-guard';

/**
 * For a second after any other request arrived, the uploads together are read at most
 * UPLOAD_PACE_BYTES_PER_SECOND (src/upload-guard.ts), so that the requests beside an upload are
 * answered promptly. The pace is kept by a clock the test moves: a wait moves it on at once, so
 * the clock's time at the end is the time the upload was held back.
 */
const PACE = 1_000_000;

type TestClock = {
  t: number;
  /** Called as the clock passes each time (once), before the wait that passed it returns. */
  at: { t: number; run: () => Promise<unknown> }[];
  /** Waits asked for. */
  waits: number;
  paceClock: PaceClock;
};

function testClock(): TestClock {
  const clock: TestClock = {
    t: 1_000_000,
    at: [],
    waits: 0,
    paceClock: {
      now: () => clock.t,
      wait: async (ms: number) => {
        clock.waits++;
        clock.t += ms;
        const due = clock.at.filter((a) => a.t <= clock.t);
        clock.at = clock.at.filter((a) => a.t > clock.t);
        for (const a of due) await a.run();
        await new Promise((resolve) => setImmediate(resolve));
      },
    },
  };
  return clock;
}

/** A plate search: a request beside the uploads. */
const search = (ctx: TestContext, company: Company) =>
  ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims/search-by-plate',
    headers: company.auth,
    payload: { vehicle_registration: 'AB123' },
  });

/** An import of five rows and `padding` blank lines after them, sent over a socket: imported whole. */
async function importOverSocket(ctx: TestContext, company: Company, padding: number) {
  const id = await postImportOverSocket(ctx.app, company.auth, csv(Array.from({ length: 5 }, () => validRow())) + '\n'.repeat(padding));
  expect(await waitForImport(ctx.app, company.auth, id)).toMatchObject({ status: 'completed', imported: 5, failed: 0 });
}

describe('uploads paced while other requests arrive', () => {
  let ctx: TestContext;
  let company: Company;
  const clock = testClock();
  beforeAll(async () => {
    ctx = await createTestContext(
      { IMPORT_MAX_BYTES: String(16 * 1024 * 1024), UPLOAD_PACE_BYTES_PER_SECOND: String(PACE) },
      { uploadPaceClock: clock.paceClock },
    );
    company = await ctx.newCompany('Paced');
  }, 120_000);
  afterAll(async () => {
    ctx?.app.server.closeAllConnections();
    await ctx?.close();
  });

  it('an upload alone is read as fast as it arrives', async () => {
    clock.t += 10 * PACE_AFTER_REQUEST_MS;
    clock.waits = 0;
    await importOverSocket(ctx, company, 3 * PACE);
    expect(clock.waits).toBe(0);
  });

  it('after another request, at the pace for a second, then as fast as it arrives', async () => {
    clock.t += 10 * PACE_AFTER_REQUEST_MS;
    await search(ctx, company);
    const start = clock.t;
    await importOverSocket(ctx, company, 3 * PACE);
    // A second's worth of the pace held back (3 s had the whole file been paced), give or take the
    // chunk that was read as the second ended and the few milliseconds a late wait is made up for.
    expect(clock.t - start).toBeGreaterThan(PACE_AFTER_REQUEST_MS - 100);
    expect(clock.t - start).toBeLessThan(PACE_AFTER_REQUEST_MS + 150);
  });

  it('each request beside the upload keeps it paced for a second more', async () => {
    clock.t += 10 * PACE_AFTER_REQUEST_MS;
    await search(ctx, company);
    const start = clock.t;
    // Another search as the upload has been paced for 0.8 s: a second more from then.
    clock.at.push({ t: start + 800, run: () => search(ctx, company) });
    await importOverSocket(ctx, company, 3 * PACE);
    expect(clock.at).toHaveLength(0);
    expect(clock.t - start).toBeGreaterThan(800 + PACE_AFTER_REQUEST_MS - 100);
    expect(clock.t - start).toBeLessThan(800 + PACE_AFTER_REQUEST_MS + 150);
  });

  it('a batch plate look-up is paced too', async () => {
    clock.t += 10 * PACE_AFTER_REQUEST_MS;
    await search(ctx, company);
    const start = clock.t;
    const plates = 'vehicle_registration\nAB123\n' + '\n'.repeat(2 * PACE);
    const res = await postLookupBatch(ctx.app, company.auth, plates);
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect(clock.t - start).toBeGreaterThan(PACE_AFTER_REQUEST_MS - 100);
  });
});

describe('UPLOAD_PACE_BYTES_PER_SECOND=0', () => {
  let ctx: TestContext;
  let company: Company;
  const clock = testClock();
  beforeAll(async () => {
    ctx = await createTestContext(
      { IMPORT_MAX_BYTES: String(16 * 1024 * 1024), UPLOAD_PACE_BYTES_PER_SECOND: '0' },
      { uploadPaceClock: clock.paceClock },
    );
    company = await ctx.newCompany('Unpaced');
  }, 120_000);
  afterAll(async () => {
    ctx?.app.server.closeAllConnections();
    await ctx?.close();
  });

  it('never paces an upload, whatever arrives beside it', async () => {
    await search(ctx, company);
    await importOverSocket(ctx, company, 3 * PACE);
    expect(clock.waits).toBe(0);
  });
});
