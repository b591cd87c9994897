import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { deleteObject, sleep, StorageOutage, storageOutageClock, StorageUnavailable, type ObjectStore } from '../storage';
import { isPlateText, LIMITS, normalizePlate } from '../claims/claim';
import { minusYears } from '../dates';
import { AppError } from '../errors';
import { isUuid } from '../ids';
import { createCsvParser, detectDelimiter, fileMessages, InvalidImportFile, MAX_HEADER_BYTES } from '../imports/csv-file';
import type { Principal } from '../principal';
import { parsePurpose } from '../registry/registry';
import { checkUpload, createUploads, readingCheck, type Upload } from '../uploads/upload';

/** The column a batch file must have; any other column is ignored. */
export const PLATE_COLUMN = 'vehicle_registration';
/** At most this many data rows in one batch file. */
export const MAX_BATCH_ROWS = 100_000;
/** Plates looked up per statement. */
export const BATCH_CHUNK = 5000;

export const BATCH_STATUSES = ['queued', 'processing', 'completed', 'failed'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

export const batchMessages = {
  notFound: 'Batch not found.',
  tooManyRows: `The file must not have more than ${MAX_BATCH_ROWS} data rows.`,
  notCompleted: 'The batch has not completed yet; its results are not ready.',
  failed: 'The batch could not be completed. Upload the file again later.',
  unavailable: 'Batch look-ups cannot be queued right now. Try again later.',
  waitingForStorage: 'Waiting for the file storage, which cannot be reached right now; the batch goes on when it is back.',
  storageOutage: (seconds: number) =>
    `The file storage could not be reached for ${seconds} seconds, so the file could not be read. Upload the file again.`,
} as const;

/** A batch as GET /lookups/batch/{id} shows it. */
export type LookupBatch = {
  id: string;
  status: BatchStatus;
  file_name: string;
  purpose: string | null;
  /** Data rows in the file. */
  plates: number;
  rows_done: number;
  /** Distinct valid normalized plates looked up so far (one results line each). */
  distinct_plates: number;
  /** Rows whose plate is empty or not letters and digits: not looked up. */
  invalid_rows: number;
  message: string | null;
  created_at: string;
  finished_at: string | null;
};
export type BatchRecord = LookupBatch & { companyId: string; tokenId: string | null; userId: string | null; objectKey: string };

/** A completed batch's results counted (the dashboard's result page shows them). */
export type ResultCounts = { found: number; notFound: number; claims: number };

export type ResultLine = { vehicle_registration: string; claims: number; companies: number; latest_claim_date: string | null; seq: number };

/** What the batch look-up needs from storage; src/db/lookup-batch-repository.ts implements it. */
export interface LookupBatchRepository {
  insert(b: {
    id: string;
    companyId: string;
    tokenId: string | null;
    userId: string | null;
    purpose: string | null;
    fileName: string;
    objectKey: string;
    plates: number;
  }): Promise<void>;
  findForCompany(companyId: string, id: string): Promise<BatchRecord | undefined>;
  /** queued or processing → processing; undefined when the batch is finished or gone. */
  start(id: string): Promise<BatchRecord | undefined>;
  /**
   * One statement: looks the plates up (within the window from `fromDate`), stores a results line
   * for each plate not yet in the batch, writes a plate_search look-up log entry for each of those,
   * and moves rows_done on by `rows`.
   */
  writeChunk(batch: BatchRecord, plates: { plate: string; seq: number }[], rows: number, invalid: number, fromDate: string): Promise<void>;
  /** Moves a queued or processing batch to its end; the key of its stored file (whatever its status), undefined when there is no such batch. */
  finish(id: string, status: 'completed' | 'failed', message: string | null): Promise<string | undefined>;
  /** The message of a processing batch (a wait for storage; null when it is over). */
  setMessage(id: string, message: string | null): Promise<void>;
  /** Results after `afterSeq` in file order, at most `limit`. */
  results(batchId: string, afterSeq: number, limit: number): Promise<ResultLine[]>;
  /** The batch's results counted: plates with claims, plates without, and their claims together. */
  resultCounts(batchId: string): Promise<ResultCounts>;
  listUnfinished(): Promise<string[]>;
}

export interface BatchQueue {
  enqueue(batchId: string): Promise<void>;
}
export class BatchQueueUnavailable extends Error {}

const notFound = () => new AppError('NOT_FOUND', batchMessages.notFound, undefined, 'not_found');

/**
 * The records of a stored CSV file, read as a stream: the delimiter is found on the header line
 * (as the import finds it), the bytes are checked on the way (no NUL byte, UTF-8), and csv-parse
 * (the import's configuration) gives one record at a time.
 */
export async function* csvRecords(source: AsyncIterable<Buffer>): AsyncGenerator<string[]> {
  const it = source[Symbol.asyncIterator]();
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const check = (chunk: Buffer) => {
    if (chunk.indexOf(0) !== -1) throw new InvalidImportFile([fileMessages.binary]);
    try {
      decoder.decode(chunk, { stream: true });
    } catch {
      throw new InvalidImportFile([fileMessages.notUtf8]);
    }
    return chunk;
  };
  let head = Buffer.alloc(0);
  let ended = false;
  while (head.indexOf(10) === -1 && head.indexOf(13) === -1 && head.length <= MAX_HEADER_BYTES) {
    const next = await it.next();
    if (next.done) {
      ended = true;
      break;
    }
    head = Buffer.concat([head, check(next.value)]);
  }
  if (head.length === 0) throw new InvalidImportFile([fileMessages.empty]);
  const firstLine = head
    .toString('utf8')
    .split(/\r\n|\n|\r/u)[0]!
    .replace(/^\uFEFF/u, '');
  const parser = createCsvParser(detectDelimiter(firstLine));
  const bytes = Readable.from(
    (async function* () {
      yield head;
      if (ended) return;
      for (let next = await it.next(); !next.done; next = await it.next()) yield check(next.value);
      try {
        decoder.decode();
      } catch {
        throw new InvalidImportFile([fileMessages.notUtf8]);
      }
    })(),
  );
  const fed = pipeline(bytes, parser).catch((err: unknown) => {
    parser.destroy(err as Error);
  });
  try {
    // The import's parser gives each record with csv-parse's counts (`info`): the cells are `record`.
    for await (const parsed of parser as AsyncIterable<string[] | { record: string[] }>)
      yield Array.isArray(parsed) ? parsed : parsed.record;
  } catch (err) {
    if (err instanceof InvalidImportFile) throw err;
    const code = (err as { code?: string }).code;
    // Not the parser's: the bytes could not be read (the storage went away mid-way, say).
    if (!code?.startsWith('CSV_')) throw err;
    const row = parser.info.records + 1;
    throw new InvalidImportFile([code === 'CSV_MAX_RECORD_SIZE' ? fileMessages.recordTooLarge(row) : fileMessages.unclosedQuote(row)]);
  } finally {
    await fed;
  }
}

const blank = (record: string[]) => record.every((cell) => cell.trim() === '');

/** The column of the plates, or InvalidImportFile naming the missing column. */
function plateColumn(header: string[]): number {
  const index = header.findIndex((name, i) => (i === 0 ? name.replace(/^\uFEFF/u, '') : name) === PLATE_COLUMN);
  if (index === -1) throw new InvalidImportFile([fileMessages.missing([PLATE_COLUMN])]);
  return index;
}

/** A plate cell normalized as a search normalizes it, or undefined when it cannot be searched. */
export function batchPlate(cell: string | undefined): string | undefined {
  if (cell === undefined || [...cell].length > LIMITS.plateMaxLength) return undefined;
  const plate = normalizePlate(cell);
  return isPlateText(plate) ? plate : undefined;
}

export type LookupBatchDeps = {
  batches: LookupBatchRepository;
  storage: ObjectStore;
  queue: BatchQueue;
  today: () => string;
  searchHistoryYears: number;
  /** `storageRetryMs`: how long a job waits out an outage of the storage (STORAGE_RETRY_SECONDS; default 300 s). */
  limits: { maxBytes: number; uploadTimeoutMs: number; storageRetryMs?: number };
  /** Called once a chunk's statement is on its way, while this thread waits for it: the heap trim (as an import's chunks). */
  whileChunkWrites?: (() => void) | undefined;
};

/** Counts the data rows of a batch file as its bytes pass, checking it as the import checks a file (InvalidImportFile). */
async function countPlates(bytes: AsyncIterable<Buffer>): Promise<number> {
  let rows = 0;
  let header = true;
  for await (const record of csvRecords(bytes)) {
    if (header) {
      plateColumn(record);
      header = false;
    } else if (!blank(record) && ++rows > MAX_BATCH_ROWS) throw new InvalidImportFile([batchMessages.tooManyRows]);
  }
  if (header) throw new InvalidImportFile([fileMessages.empty]);
  return rows;
}

export function createLookupBatchService(deps: LookupBatchDeps) {
  const { batches, storage, queue, limits } = deps;
  const uploads = createUploads({ storage, limits });

  /**
   * POST /lookups/batch: stores the file (src/domain/uploads/upload.ts), checked on its way as the
   * import's is (the import's file errors, a 422, leave nothing behind), then records the batch
   * (queued) and queues its job; when either fails, the file goes.
   */
  async function submit(
    principal: Principal,
    upload: Upload,
    purposeRaw: unknown,
    /** Told the number of plates once the file is checked, before the batch is recorded; its error leaves nothing behind. */
    admit?: (plates: number) => Promise<void>,
  ): Promise<LookupBatch> {
    const errors = {};
    const purpose = parsePurpose(purposeRaw, errors);
    checkUpload(upload, errors);
    const id = randomUUID();
    await uploads.storeFor(upload, `lookup-batches/${principal.companyId}/${id}`, readingCheck(countPlates), async (file) => {
      await admit?.(file.dataRows);
      await batches.insert({
        id,
        companyId: principal.companyId,
        tokenId: principal.tokenId,
        userId: principal.userId,
        purpose,
        fileName: file.fileName,
        objectKey: file.objectKey,
        plates: file.dataRows,
      });
      try {
        await queue.enqueue(id);
      } catch (err) {
        await batches.finish(id, 'failed', batchMessages.unavailable);
        if (err instanceof BatchQueueUnavailable) throw new AppError('UNAVAILABLE', batchMessages.unavailable);
        throw err;
      }
    });
    return get(principal, id);
  }

  async function find(principal: Pick<Principal, 'companyId'>, id: string): Promise<BatchRecord> {
    const found = isUuid(id) ? await batches.findForCompany(principal.companyId, id) : undefined;
    if (!found) throw notFound();
    return found;
  }

  const publicOf = ({ companyId: _c, tokenId: _t, userId: _u, objectKey: _o, ...batch }: BatchRecord): LookupBatch => batch;

  async function get(principal: Pick<Principal, 'companyId'>, id: string): Promise<LookupBatch> {
    return publicOf(await find(principal, id));
  }

  /**
   * The job: reads the stored file as a stream and looks its plates up BATCH_CHUNK at a time, one
   * statement per chunk (results, look-up log, progress together), so memory stays flat whatever
   * the file's size. A run that starts again goes on after the rows already done.
   */
  async function process(batchId: string): Promise<void> {
    // An outage of the storage is waited out (the file read again, going on after the rows done),
    // for up to STORAGE_RETRY_SECONDS, counting no attempt; longer, the batch fails saying why.
    const clock = storageOutageClock({ retryMs: limits.storageRetryMs ?? 300_000 });
    for (;;) {
      try {
        await processOnce(batchId, async () => {
          if (!clock.waiting) return;
          clock.ok();
          await batches.setMessage(batchId, null);
        });
        return;
      } catch (err) {
        if (!(err instanceof StorageUnavailable)) throw err;
        const first = !clock.waiting;
        let wait: number;
        try {
          wait = clock.failed(err);
        } catch (outage) {
          if (!(outage instanceof StorageOutage)) throw outage;
          await end(batchId, 'failed', batchMessages.storageOutage(outage.seconds));
          return;
        }
        if (first) await batches.setMessage(batchId, batchMessages.waitingForStorage);
        await sleep(wait);
      }
    }
  }

  /** A batch ends: its status, then its file goes (it may hold personal data). */
  async function end(batchId: string, status: 'completed' | 'failed', message: string | null): Promise<void> {
    const key = await batches.finish(batchId, status, message);
    if (key) await deleteObject(storage, key);
  }

  async function processOnce(batchId: string, progressed: () => Promise<void>): Promise<void> {
    const batch = await batches.start(batchId);
    if (!batch) return;
    const fromDate = minusYears(deps.today(), deps.searchHistoryYears);
    let column = -1;
    let row = 0;
    let chunk: { plate: string; seq: number }[] = [];
    let rows = 0;
    let invalid = 0;
    const flush = async () => {
      if (rows === 0) return;
      // Each chunk's plates and statement parameters outlive a young collection (the statement
      // takes a few hundred ms), so without a full collection now and then the heap grew with
      // the file (a 100,000-plate batch: +76 MB of peak memory in the worker, +16 MB for 10,000).
      const written = batches.writeChunk(batch, chunk, rows, invalid, fromDate);
      deps.whileChunkWrites?.();
      await written;
      await progressed();
      chunk = [];
      rows = 0;
      invalid = 0;
    };
    try {
      for await (const record of csvRecords(await storage.getStream(batch.objectKey))) {
        if (column === -1) {
          column = plateColumn(record);
          continue;
        }
        if (blank(record)) continue;
        row++;
        if (row <= batch.rows_done) continue;
        const plate = batchPlate(record[column]);
        if (plate === undefined) invalid++;
        else chunk.push({ plate, seq: row });
        rows++;
        if (rows >= BATCH_CHUNK) await flush();
      }
      await flush();
    } catch (err) {
      if (err instanceof InvalidImportFile) {
        await end(batchId, 'failed', err.messages[0] ?? batchMessages.failed);
        return;
      }
      throw err;
    }
    await progressed();
    await end(batchId, 'completed', null);
  }

  /** A job that failed for good. */
  const markFailed = (batchId: string) => end(batchId, 'failed', batchMessages.failed);

  /** results.csv: one line per distinct plate in file order, read in pages (flat memory). */
  async function results(principal: Pick<Principal, 'companyId'>, id: string): Promise<{ batch: LookupBatch; csv: Readable }> {
    const batch = await find(principal, id);
    if (batch.status !== 'completed') throw new AppError('CONFLICT', batchMessages.notCompleted, undefined, 'conflict');
    const lines = async function* () {
      yield 'vehicle_registration,claims,companies,latest_claim_date\r\n';
      for (let after = 0; ;) {
        const page = await batches.results(batch.id, after, 5000);
        if (page.length === 0) return;
        yield page.map((r) => `${r.vehicle_registration},${r.claims},${r.companies},${r.latest_claim_date ?? ''}\r\n`).join('');
        after = page.at(-1)!.seq;
      }
    };
    return { batch: publicOf(batch), csv: Readable.from(lines()) };
  }

  /** A completed batch's results counted; null while it runs, or when it failed. */
  async function counts(principal: Pick<Principal, 'companyId'>, id: string): Promise<ResultCounts | null> {
    const batch = await find(principal, id);
    return batch.status === 'completed' ? batches.resultCounts(batch.id) : null;
  }

  /** Batches a stopped process left unfinished, queued again (their rows done are kept). */
  async function resumeUnfinished(): Promise<number> {
    const ids = await batches.listUnfinished();
    for (const id of ids) await queue.enqueue(id);
    return ids.length;
  }

  return { submit, get, process, markFailed, results, counts, resumeUnfinished };
}
export type LookupBatchService = ReturnType<typeof createLookupBatchService>;
