import { describe, expect, it } from 'vitest';

import { AppError } from '../../src/domain/errors';
import { createLookupJournal } from '../../src/domain/registry/lookup-journal';
import type { LookupEntry } from '../../src/domain/registry/registry';

/**
 * The look-up log's group commit: a look-up is settled only once its entry is written; entries
 * that arrive while a batch is being written go together in the next one; a batch that cannot be
 * written fails its look-ups (503) instead of letting them be answered without a record.
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
  resultCount: null,
});
const ids = (batches: LookupEntry[][]) => batches.map((b) => b.map((e) => e.id));

/** A write the test completes by hand: `writes` are the batches asked for, `finish(i)` commits one. */
function manualWrite() {
  const writes: { entries: LookupEntry[]; commit: () => void; fail: (err: Error) => void }[] = [];
  const write = (entries: LookupEntry[]) =>
    new Promise<void>((resolve, reject) => {
      writes.push({ entries, commit: resolve, fail: reject });
    });
  return { write, writes };
}

/** Follows a look-up's promise: 'pending', then 'written' or the error it was refused with. */
function track(p: Promise<void>) {
  const t: { state: unknown } = { state: 'pending' };
  p.then(
    () => (t.state = 'written'),
    (err: unknown) => (t.state = err),
  );
  return t;
}
/** Lets every settled promise's callbacks run. */
const turn = () => new Promise((r) => setImmediate(r));
const states = (ts: { state: unknown }[]) => ts.map((t) => t.state);

describe('look-up journal', () => {
  it('writes a lone look-up at once, and settles it only when its write has committed', async () => {
    const { write, writes } = manualWrite();
    const at = Date.parse('2026-01-01T10:00:00.000Z');
    const journal = createLookupJournal({ write, now: () => at });
    const looked = track(journal.record(entry(1)));
    expect(ids(writes.map((w) => w.entries))).toEqual([['id-1']]);
    await turn();
    expect(looked.state).toBe('pending');
    writes[0]!.commit();
    await turn();
    expect(looked.state).toBe('written');
    expect(new Date(writes[0]!.entries[0]!.at).toISOString()).toBe('2026-01-01T10:00:00.000Z');
  });

  it('groups the look-ups that arrive while a batch is being written into the next batch, in order', async () => {
    const { write, writes } = manualWrite();
    const journal = createLookupJournal({ write });
    const first = track(journal.record(entry(1)));
    const later = [2, 3, 4].map((n) => track(journal.record(entry(n))));
    expect(writes).toHaveLength(1);
    writes[0]!.commit();
    await turn();
    expect(first.state).toBe('written');
    expect(states(later)).toEqual(['pending', 'pending', 'pending']);
    expect(ids(writes.map((w) => w.entries))).toEqual([['id-1'], ['id-2', 'id-3', 'id-4']]);
    writes[1]!.commit();
    await turn();
    expect(states(later)).toEqual(['written', 'written', 'written']);
    expect(journal.waiting()).toBe(0);
  });

  it('with two writers, writes a look-up at once while another batch is in flight, and groups what comes while both are busy', async () => {
    const { write, writes } = manualWrite();
    const journal = createLookupJournal({ write, writers: 2 });
    const first = track(journal.record(entry(1)));
    const second = track(journal.record(entry(2)));
    const later = [3, 4].map((n) => track(journal.record(entry(n))));
    expect(ids(writes.map((w) => w.entries))).toEqual([['id-1'], ['id-2']]);
    writes[1]!.commit();
    await turn();
    expect([first.state, second.state]).toEqual(['pending', 'written']);
    expect(ids(writes.map((w) => w.entries))).toEqual([['id-1'], ['id-2'], ['id-3', 'id-4']]);
    writes[0]!.commit();
    writes[2]!.commit();
    await turn();
    expect([first.state, ...states(later)]).toEqual(['written', 'written', 'written']);
    expect(journal.waiting()).toBe(0);
  });

  it('splits a backlog into statements of at most maxBatch entries, settling them when the last is written', async () => {
    const { write, writes } = manualWrite();
    const journal = createLookupJournal({ write, maxBatch: 2 });
    void journal.record(entry(0));
    const backlog = [1, 2, 3, 4, 5].map((n) => track(journal.record(entry(n))));
    for (let i = 0; i < 3; i++) {
      writes[i]!.commit();
      await turn();
      expect(states(backlog)).toEqual(['pending', 'pending', 'pending', 'pending', 'pending']);
    }
    writes[3]!.commit();
    await turn();
    expect(states(backlog)).toEqual(['written', 'written', 'written', 'written', 'written']);
    expect(ids(writes.map((w) => w.entries))).toEqual([['id-0'], ['id-1', 'id-2'], ['id-3', 'id-4'], ['id-5']]);
  });

  it('fails every look-up of a batch that could not be written with a 503, and goes on with the next batch', async () => {
    const { write, writes } = manualWrite();
    const errors: unknown[] = [];
    const journal = createLookupJournal({ write, onError: (err) => errors.push(err) });
    const first = track(journal.record(entry(1)));
    const second = track(journal.record(entry(2)));
    writes[0]!.fail(new Error('connection reset'));
    await turn();
    expect(first.state).toBeInstanceOf(AppError);
    expect(first.state).toMatchObject({ code: 'UNAVAILABLE' });
    expect(errors).toHaveLength(1);
    // The entry that was waiting is written in a batch of its own and settles normally.
    expect(ids(writes.map((w) => w.entries))).toEqual([['id-1'], ['id-2']]);
    writes[1]!.commit();
    await turn();
    expect(second.state).toBe('written');
  });

  it('refuses a look-up with a 503 at once when maxBacklog entries are waiting', async () => {
    const { write, writes } = manualWrite();
    const journal = createLookupJournal({ write, maxBacklog: 3 });
    const waiting = [1, 2, 3].map((n) => track(journal.record(entry(n))));
    const refused = track(journal.record(entry(4)));
    await turn();
    expect(refused.state).toBeInstanceOf(AppError);
    expect(refused.state).toMatchObject({ code: 'UNAVAILABLE' });
    expect(journal.waiting()).toBe(3);
    writes[0]!.commit();
    await turn();
    writes[1]!.commit();
    await turn();
    expect(states(waiting)).toEqual(['written', 'written', 'written']);
  });

  it('flush resolves once everything noted so far has been written', async () => {
    const { write, writes } = manualWrite();
    const journal = createLookupJournal({ write });
    void journal.record(entry(1));
    void journal.record(entry(2));
    const flushed = track(journal.flush());
    writes[0]!.commit();
    await turn();
    expect(flushed.state).toBe('pending');
    writes[1]!.commit();
    await turn();
    expect(flushed.state).toBe('written');
  });
});
