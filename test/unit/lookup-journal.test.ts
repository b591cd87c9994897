import { describe, expect, it } from 'vitest';

import { AppError } from '../../src/domain/errors';
import { createLookupJournal } from '../../src/domain/registry/lookup-journal';
import type { LookupEntry } from '../../src/domain/registry/registry';

/**
 * The look-up log's batching: entries are written in order, together, and none is dropped when a
 * write fails; when too many are waiting, look-ups are refused instead of going unrecorded.
 */
const entry = (n: number): Omit<LookupEntry, 'at'> => ({
  id: `id-${n}`,
  companyId: 'c',
  tokenId: 't',
  userId: null,
  purpose: null,
  kind: 'plate_search',
  vehicleRegistration: `P${n}`,
  clientId: null,
  claimId: null,
  claimIds: [],
});
const ids = (batches: LookupEntry[][]) => batches.map((b) => b.map((e) => e.id));

describe('look-up journal', () => {
  it('writes what was noted in one batch after flushMs, each entry stamped with the time of its look-up', async () => {
    const written: LookupEntry[][] = [];
    const times = [Date.parse('2026-01-01T10:00:00.000Z'), Date.parse('2026-01-01T10:00:00.005Z')];
    const journal = createLookupJournal({ write: async (b) => void written.push(b), flushMs: 20, now: () => times.shift()! });
    journal.record(entry(1));
    journal.record(entry(2));
    expect(written).toEqual([]);
    await new Promise((r) => setTimeout(r, 60));
    expect(ids(written)).toEqual([['id-1', 'id-2']]);
    expect(written[0]!.map((e) => new Date(e.at).toISOString())).toEqual(['2026-01-01T10:00:00.000Z', '2026-01-01T10:00:00.005Z']);
  });

  it('writes at once when a full batch is waiting, and splits a backlog into batches of at most maxBatch', async () => {
    const written: LookupEntry[][] = [];
    let fail = true;
    const journal = createLookupJournal({
      write: async (b) => {
        if (fail) throw new Error('database down');
        written.push(b);
      },
      flushMs: 60_000,
      maxBatch: 2,
    });
    for (let n = 1; n <= 5; n++) journal.record(entry(n));
    await journal.flush();
    expect(written).toEqual([]);
    expect(journal.waiting()).toBe(5);
    fail = false;
    await journal.flush();
    expect(ids(written)).toEqual([['id-1', 'id-2'], ['id-3', 'id-4'], ['id-5']]);
    expect(journal.waiting()).toBe(0);
  });

  it('keeps a batch that failed, in order before later entries, and writes it with them', async () => {
    const written: LookupEntry[][] = [];
    const errors: unknown[] = [];
    let calls = 0;
    const journal = createLookupJournal({
      write: async (b) => {
        if (calls++ === 0) throw new Error('connection reset');
        written.push(b);
      },
      flushMs: 60_000,
      onError: (err) => errors.push(err),
    });
    journal.record(entry(1));
    await journal.flush();
    journal.record(entry(2));
    await journal.flush();
    expect(errors).toHaveLength(1);
    expect(ids(written)).toEqual([['id-1', 'id-2']]);
  });

  it('refuses a look-up with a 503 when maxBacklog entries could not be written', async () => {
    const journal = createLookupJournal({
      write: () => Promise.reject(new Error('database down')),
      flushMs: 60_000,
      maxBacklog: 3,
    });
    for (let n = 1; n <= 3; n++) journal.record(entry(n));
    await journal.flush();
    let refused: unknown;
    try {
      journal.record(entry(4));
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'UNAVAILABLE' });
    expect(journal.waiting()).toBe(3);
  });
});
