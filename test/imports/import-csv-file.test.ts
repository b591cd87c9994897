import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';

import {
  checkFileName,
  createFileInspector,
  detectDelimiter,
  fileMessages,
  InvalidImportFile,
  MAX_FIELD_COUNT_ERRORS,
  readImportRows,
  sanitizeFileName,
  toClaimBody,
  toColumnErrors,
  type Column,
} from '../../src/domain/imports/csv-file';
import { ImportBusy } from '../../src/domain/imports/chunk-run';
import { ImportGone, type ProcessOutcome } from '../../src/domain/imports/import-run';
import { importCsvProcessor, PermanentImportFailure, type ImportJob } from '../../src/workers/import-csv.processor';
import { createInProcessImportQueue } from '../../src/workers/in-process-runner';
import { checkEvictionPolicy, enqueue } from '../../src/workers/queues';
import { HEADER } from '../import-helpers';

/** Runs bytes through the inspector in the given chunks. */
async function inspect(chunks: (string | Buffer)[]) {
  const inspector = createFileInspector();
  await pipeline(
    Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))),
    inspector,
    new Writable({ write: (_c, _e, cb) => cb() }),
  );
  return inspector.result();
}

/** Every split of `text` into two chunks gives the same answer. */
async function everySplit(text: string) {
  const bytes = Buffer.from(text);
  const results = [];
  for (let i = 0; i <= bytes.length; i++) {
    results.push(await inspect([bytes.subarray(0, i), bytes.subarray(i)]).catch((e: Error) => e.message));
  }
  return results;
}

async function rows(text: string) {
  const out = [];
  for await (const r of readImportRows(Readable.from([Buffer.from(text)]))) out.push(r);
  return out;
}

describe('the upload inspector', () => {
  it('counts data rows whatever the chunk boundaries (CRLF, quoted line breaks, multi-byte characters)', async () => {
    const text = `\uFEFF${HEADER}\r\nOna,"Multi\r\nline ą",1985-06-02,passport,X,2026-01-01,A1,,,,,\r\n\r\nJonas,B,1,2,3,4,5,,,,,\r\n,,,,,,,,,,,\r\nLast,row,without,newline,,,,,,,,`;
    const results = await everySplit(text);
    expect(new Set(results.map((r) => (typeof r === 'string' ? r : r.dataRows)))).toEqual(new Set([3]));
    const first = results[0] as { header: { delimiter: string } };
    expect(first.header.delimiter).toBe(',');
  });

  it('rejects at the first chunk that shows the problem', async () => {
    await expect(inspect(['a\u0000b'])).rejects.toThrow('binary');
    await expect(inspect([Buffer.from([0x66, 0x69, 0xff, 0x0a])])).rejects.toThrow('UTF-8');
    // A character split between chunks is fine; one cut off at the end is not UTF-8.
    const e = Buffer.from(`${HEADER}\nė`);
    await expect(inspect([e.subarray(0, e.length - 1), e.subarray(e.length - 1)])).resolves.toMatchObject({ dataRows: 1 });
    await expect(inspect([e.subarray(0, e.length - 1)])).rejects.toThrow('UTF-8');
    await expect(inspect([`${HEADER.replace('amount', 'sum')}\n`])).rejects.toThrow('unknown column: sum');
    await expect(inspect(['x'.repeat(70 * 1024)])).rejects.toThrow('within the first 64 KB');
    await expect(inspect([`${HEADER}\nOna,"open\n`])).rejects.toThrow('Row 2 has a quoted field that is never closed');
  });

  it("gives the server's other requests turns while it reads a large block of the upload", async () => {
    // 20,000 rows arriving as one block, as a socket hands over a fast upload.
    const row = 'Ona,Petraitė,1985-06-02,passport,X1234567,2026-01-01,ABC123,,100,EUR,false,open';
    const block = Buffer.from(`${HEADER}\n${`${row}\n`.repeat(20_000)}`);
    let turns = 0;
    let inspecting = true;
    const other = () => {
      turns++;
      if (inspecting) setImmediate(other);
    };
    setImmediate(other);
    const result = await inspect([block]);
    inspecting = false;
    expect(result.dataRows).toBe(20_000);
    // A turn at least every 64 KB of the block (without them: none until it was all read).
    expect(turns).toBeGreaterThan(block.length / (64 * 1024));
  });

  it('detects the delimiter from the header line', () => {
    expect(detectDelimiter('a,b,c')).toBe(',');
    expect(detectDelimiter('a;b;c')).toBe(';');
    expect(detectDelimiter('a\tb\tc')).toBe('\t');
    expect(detectDelimiter('a;b,c;d')).toBe(';');
    expect(detectDelimiter('single')).toBe(',');
  });
});

describe('reading rows', () => {
  it('numbers rows as a spreadsheet does and reports wrong field counts on "row"', async () => {
    const got = await rows(
      `${HEADER}\n\nOna,P,1985-06-02,passport,X1,2026-01-01,A1,,,,,\nshort,row\n"a\nb",P,1985-06-02,passport,X2,2026-01-01,A2,,,,,\n`,
    );
    expect(got.map((r) => r.row)).toEqual([3, 4, 5]);
    expect(got[1]).toMatchObject({ row: 4, errors: { row: ['The row has 2 fields; the header has 12.'] } });
  });

  it('keeps spreadsheet row numbers across runs of empty lines, which the parser skips (CRLF, LF and CR)', async () => {
    const row = 'A,B,1985-06-02,passport,X1,2026-01-01,P1,,,,,';
    const out = await rows(`${HEADER}\r\n\r\n\r\n${row}\n\n${row}\r\r${row}\n  \n${row}`);
    expect(out.map((r) => r.row)).toEqual([4, 6, 8, 10]);
  });

  it(`fails the file once more than ${MAX_FIELD_COUNT_ERRORS} rows have another field count than the header`, async () => {
    const ok = Array.from({ length: MAX_FIELD_COUNT_ERRORS }, () => 'x').join('\n');
    expect(await rows(`${HEADER}\n${ok}\n`)).toHaveLength(MAX_FIELD_COUNT_ERRORS);
    const err = await rows(`${HEADER}\n${ok}\nx\n`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidImportFile);
    expect((err as InvalidImportFile).messages).toEqual([fileMessages.fieldCounts(MAX_FIELD_COUNT_ERRORS + 2, 1, 12)]);
  });

  it('maps a record to the POST /claims body and the API field paths back to columns', () => {
    const columns = HEADER.split(',') as Column[];
    const body = toClaimBody(['Ona', 'P', '1985-06-02', 'passport', 'X1', '2026-01-01', 'A1', '', ' ', 'EUR', 'TRUE', ''], columns);
    expect(body).toEqual({
      client: { first_name: 'Ona', last_name: 'P', date_of_birth: '1985-06-02', id_documents: [{ type: 'passport', number: 'X1' }] },
      claim_date: '2026-01-01',
      vehicle_registration: 'A1',
      claim_type: undefined,
      amount: undefined,
      currency: 'EUR',
      is_at_fault: true,
      status: undefined,
    });
    expect(toClaimBody(Array(11).fill('').concat('yes'), columns.slice(0, 11).concat('is_at_fault' as Column)).is_at_fault).toBe('yes');
    expect(
      toColumnErrors({
        'client.first_name': ['a'],
        'client.id_documents.0.type': ['b'],
        'client.id_documents.0.number': ['c'],
        'client.id_documents': ['d'],
        claim_date: ['e'],
      }),
    ).toEqual({ first_name: ['a'], id_type: ['b'], id_number: ['c', 'd'], claim_date: ['e'] });
  });

  it('checks the file name and keeps a safe display name', () => {
    expect(checkFileName('a.CSV')).toBeUndefined();
    expect(checkFileName('a.txt')).toBeUndefined();
    expect(checkFileName('a.xlsx')).toMatch(/csv, txt/u);
    expect(checkFileName(undefined)).toMatch(/csv, txt/u);
    expect(sanitizeFileName('C:\\Users\\me\\claims\u0007.csv')).toBe('claims_.csv');
    expect(sanitizeFileName('')).toBe('upload.csv');
  });
});

describe('the import job processor', () => {
  const job = (over: Partial<ImportJob> = {}): ImportJob => ({
    data: { importId: '7d4f1c3e-5b7a-4c1e-9a55-2f0a8c1b2d3e' },
    attemptsMade: 0,
    opts: { attempts: 3 },
    updateProgress: async () => {},
    ...over,
  });

  it('turns permanent failures into PermanentImportFailure and marks the import failed', async () => {
    for (const [err, failure] of [
      [new InvalidImportFile(['The file is empty.']), 'invalid_file'],
      [new ImportGone('gone'), 'error'],
    ] as const) {
      const markFailed = vi.fn(async () => {});
      const run = importCsvProcessor({ imports: { process: async () => Promise.reject(err), markFailed } });
      await expect(run(job())).rejects.toBeInstanceOf(PermanentImportFailure);
      expect(markFailed).toHaveBeenCalledWith(job().data.importId, failure, expect.any(String));
    }
    await expect(
      importCsvProcessor({ imports: { process: vi.fn(), markFailed: vi.fn() } })(job({ data: { importId: 'x' } })),
    ).rejects.toBeInstanceOf(PermanentImportFailure);
  });

  it('rethrows other errors for a retry, marking the import failed only on the last attempt', async () => {
    const markFailed = vi.fn(async () => {});
    const run = importCsvProcessor({ imports: { process: async () => Promise.reject(new Error('connection reset')), markFailed } });
    await expect(run(job({ attemptsMade: 0 }))).rejects.toThrow('connection reset');
    expect(markFailed).not.toHaveBeenCalled();
    await expect(run(job({ attemptsMade: 2 }))).rejects.toThrow('connection reset');
    expect(markFailed).toHaveBeenCalledTimes(1);
    const busy = importCsvProcessor({ imports: { process: async () => Promise.reject(new ImportBusy()), markFailed } });
    await expect(busy(job({ attemptsMade: 2 }))).rejects.toBeInstanceOf(ImportBusy);
    expect(markFailed).toHaveBeenCalledTimes(1);
  });

  it('waits out a database outage within the attempt (a failover), and gives the attempt up after the ride-out', async () => {
    const outage = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const standby = Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' });
    const markFailed = vi.fn(async () => {});
    let calls = 0;
    const done = { status: 'completed' } as unknown as ProcessOutcome;
    const process = async () => (++calls <= 2 ? Promise.reject(calls === 1 ? outage : standby) : done);
    const run = importCsvProcessor({ imports: { process, markFailed }, databaseOutage: { rideOutMs: 60_000, pauseMs: 1 } });
    await expect(run(job({ attemptsMade: 2 }))).resolves.toBe(done);
    expect(calls).toBe(3);
    expect(markFailed).not.toHaveBeenCalled();
    const never = importCsvProcessor({
      imports: { process: async () => Promise.reject(outage), markFailed },
      databaseOutage: { rideOutMs: 20, pauseMs: 5 },
    });
    await expect(never(job({ attemptsMade: 0 }))).rejects.toBe(outage);
    expect(markFailed).not.toHaveBeenCalled();
  });
});

describe('queue helpers', () => {
  it('warns loudly unless Redis keeps every key (noeviction)', async () => {
    const log = { error: vi.fn(), warn: vi.fn() } as unknown as pino.Logger;
    await checkEvictionPolicy({ info: async () => '# Memory\r\nmaxmemory_policy:noeviction\r\n' }, log);
    expect(log.error).not.toHaveBeenCalled();
    await checkEvictionPolicy({ info: async () => '# Memory\r\nmaxmemory_policy:allkeys-lru\r\n' }, log);
    expect(log.error).toHaveBeenCalledWith({ maxmemoryPolicy: 'allkeys-lru' }, expect.stringContaining('REDIS IS MISCONFIGURED'));
    await checkEvictionPolicy({ info: async () => Promise.reject(new Error('NOPERM')) }, log);
    expect(log.warn).toHaveBeenCalled();
  });

  it('requires a business job id without ":" that is not all digits', async () => {
    const add = vi.fn(async () => ({}));
    const queue = { add } as never;
    await expect(enqueue(queue, 'import-csv', { importId: 'a' }, { jobId: 'import:1' })).rejects.toThrow(':');
    await expect(enqueue(queue, 'import-csv', { importId: 'a' }, { jobId: '123' })).rejects.toThrow('digits');
    await enqueue(queue, 'import-csv', { importId: 'a' }, { jobId: 'import-a' });
    expect(add).toHaveBeenCalledWith('import-csv', { importId: 'a' }, { jobId: 'import-a' });
  });

  it('runs jobs in process, one id once, and stops at a PermanentImportFailure', async () => {
    const queue = createInProcessImportQueue({ concurrency: 1, attempts: 3, log: pino({ level: 'silent' }) });
    const seen: string[] = [];
    queue.start(async (j) => {
      seen.push(j.data.importId);
      if (j.data.importId === 'bad') throw new PermanentImportFailure('no');
      return { importId: j.data.importId, status: 'completed', imported: 0, failed: 0, alreadyDone: false };
    });
    await queue.enqueue('a');
    await queue.enqueue('a');
    await queue.enqueue('bad');
    await queue.waitFor('a', 1000);
    await queue.waitFor('bad', 1000);
    expect(seen).toEqual(['a', 'bad']);
    await queue.close();
    await expect(queue.enqueue('c')).rejects.toThrow('shutting down');
    expect(queue.available()).toBe(false);
  });
});
