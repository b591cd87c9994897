import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';

import type { AuditEventInput } from '../audit/audit';
import type { IdentityCheck } from '../clients/identity-checks';
import { deleteObject, ObjectNotFound, sleep, storageOutageClock, StorageUnavailable, type ObjectStore } from '../storage';
import { AppError } from '../errors';
import { pageOf, pageRequest } from '../paging';
import { isUuid } from '../ids';
import type { Principal } from '../principal';
import { actorOf, NO_ORIGIN, type AuditActor, type AuditOrigin } from '../audit/audit';
import { withRetries } from '../claims/claim-service';
import { checkUpload, createUploads, type StoredFile, type Upload } from '../uploads/upload';
import {
  createChunkWriter,
  ledgerEntry,
  lookAhead,
  lookedUp,
  prepareChunk,
  yieldToEventLoop,
  type ChunkResult,
  type ClaimWriter,
  type DocumentsOf,
  type LookAhead,
  type PersonsResult,
} from './chunk-writer';
import { readChunks, type ReadChunk } from './chunk-reader';
import { planRanges, type ImportRange } from './range-plan';
import { writeChunks, type Started } from './chunk-scheduler';
import { createFileInspector, OPTIONAL_COLUMNS, readImportRows, REQUIRED_COLUMNS, type ImportRow } from './csv-file';
import { createImportStateMachine, isTerminal } from './import-status';
import type { CommittedChunk, ImportFailure, ImportRecord, ImportStatus, ImportRepos, ImportTx, RowError } from './ports';

/** Thrown at the end of a dry run so that its transaction is rolled back. */
class DryRunRollback extends Error {}

/**
 * Where import jobs go: BullMQ on Redis (separate worker processes) or the in-process runner.
 * Either way the job carries only the import's id; the imports row is the source of truth.
 */
export interface ImportQueue {
  readonly kind: 'bullmq' | 'in-process';
  /** False when no job can be taken right now (Redis unreachable): the API answers 503 at once. */
  available(): boolean;
  /**
   * Rejects with QueueUnavailable, quickly, when the job cannot be queued. `rank` is the import's
   * place among its company's unfinished imports (1 when it is the only one; 1 when left out):
   * jobs are taken lowest rank first, equal ranks in the order queued, so that a company's file
   * never waits behind another company's backlog (docs/import-pipeline.md, "Many imports").
   */
  enqueue(importId: string, rank?: number): Promise<void>;
  /** Resolves when the job has settled or `timeoutMs` has passed; never rejects for the job's own failure. */
  waitFor(importId: string, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export class QueueUnavailable extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'QueueUnavailable';
  }
}
/** The import row or its file is gone: retrying cannot help. */
export class ImportGone extends Error {
  constructor(what: string) {
    super(what);
    this.name = 'ImportGone';
  }
}
/**
 * A range of a split file waited too long for a chunk of an earlier range (a range no worker has
 * taken yet): its job gives its worker up and runs again a little later, going on after its
 * committed chunks. Not a failure: it counts no attempt.
 */
export class RangeWaiting extends Error {
  constructor() {
    super('A range of the file waits for an earlier one');
    this.name = 'RangeWaiting';
  }
}
/** Another run of this import is ahead of this one (a redelivered job): try again later. */
export class ImportBusy extends Error {
  constructor() {
    super('The import is being processed by another worker');
    this.name = 'ImportBusy';
  }
}

export const importMessages = {
  unavailable: 'Imports are unavailable right now (the job queue cannot be reached); nothing was imported. Try again later.',
  failed: 'The import could not be completed; nothing was imported. Try again later.',
  waitingForStorage: 'Waiting for the file storage, which cannot be reached right now; the import goes on when it is back.',
  storageOutage: (seconds: number) =>
    `The file storage could not be reached for ${seconds} seconds, so the file could not be read; nothing was imported. Upload the file again.`,
  notFound: 'Import not found.',
  cancelled: 'The import was cancelled; nothing was imported.',
  alreadyFinished: 'The import has already finished.',
  finished: (imported: number, failed: number) => `Import finished: ${imported} imported, ${failed} failed.`,
} as const;

export type ReceivedFile = StoredFile & { importId: string };
/** A job's progress; `waiting_for: 'storage'` while it waits out an outage of the file storage. */
export type ImportProgress = { rows_done: number; rows_total: number; waiting_for?: 'storage' };
export type ProcessOutcome = { importId: string; status: ImportStatus; imported: number; failed: number; alreadyDone: boolean };

export type ImportServiceDeps<Tx extends ImportTx> = {
  repos: ImportRepos<Tx>;
  /** Stores a chunk's valid rows set-based in the chunk's transaction (the single-claim identity rules). */
  writeClaims: ClaimWriter<Tx>;
  /** A claim's identity documents as stored (hashed), worked out before a chunk's transaction. */
  documentsOf: DocumentsOf;
  storage: ObjectStore;
  queue: ImportQueue;
  today: () => string;
  /** The time (ms since the epoch); default: the real time. */
  now?: () => number;
  /** `writers`: chunk transactions of one import in flight at a time (IMPORT_WRITERS; 1 if not given, and where there is one session). */
  /** `storageRetryMs`: how long a run waits out an outage of the storage (STORAGE_RETRY_SECONDS; default 300 s). */
  limits: { maxBytes: number; chunkSize: number; uploadTimeoutMs: number; writers?: number; storageRetryMs?: number };
  /** Runs inside the transaction of every move into completed, failed or cancelled. */
  onTerminal?: (tx: Tx, run: ImportRecord) => Promise<void>;
  /** Called right after a chunk has committed, before its progress is reported (crash tests). */
  afterChunkCommit?: (chunkNo: number) => void;
  /** Awaited in a chunk's transaction before its write (crash tests: a chunk held open while later ones commit). */
  beforeChunkWrite?: (chunkNo: number) => Promise<void>;
  /**
   * Called while a chunk's write runs in the database and this thread only waits for it: work
   * done here (the heap trim) holds up neither the database nor the next chunk.
   */
  whileChunkWrites?: () => void;
  /** Claims of a failed or cancelled import removed per statement. */
  purgeBatch?: number;
};

/** How long a range's chunk waits for the chunks of earlier ranges it needs before its job gives its worker up. */
const RANGE_WAIT_MS = 10_000;
/** How often it looks whether they have committed. */
const RANGE_POLL_MS = 50;

/** What splitting a file across workers comes to: its ranges, the whole file in one run, or nothing to run. */
export type SplitPlan = { kind: 'ranges'; ranges: ImportRange[] } | { kind: 'whole' } | { kind: 'done'; outcome: ProcessOutcome };

/** What one chunk's write came to, and the look-up it made for the next chunk (one writer). */
type Written = { no: number; rows: number; result: ChunkResult; ahead?: { for: number; found: LookAhead } };

export function createImportService<Tx extends ImportTx>(deps: ImportServiceDeps<Tx>) {
  const { repos, storage, queue, today, limits } = deps;
  const machine = createImportStateMachine<Tx>({ repos, ...(deps.onTerminal ? { onTerminal: deps.onTerminal } : {}) });
  const writer = createChunkWriter<Tx>({
    repos,
    writeClaims: deps.writeClaims,
    whileWriting: deps.whileChunkWrites,
    beforeWrite: deps.beforeChunkWrite,
  });
  // One session (embedded): chunks in flight side by side would only take turns.
  const writers = deps.writeClaims.lookupOutside ? (limits.writers ?? 1) : 1;
  const objectKeyOf = (companyId: string, importId: string) => `imports/${companyId}/${importId}`;
  const uploads = createUploads({ storage, limits, pendingUploads: repos.pendingUploads });

  /**
   * Stores the upload (src/domain/uploads/upload.ts) through the import's file inspector. Every
   * file-level problem is a 422 before any row is processed, and leaves nothing stored.
   */
  async function receive(principal: Principal, upload: Upload): Promise<ReceivedFile> {
    checkUpload(upload);
    if (!queue.available()) throw new AppError('UNAVAILABLE', importMessages.unavailable);
    const importId = randomUUID();
    const inspector = createFileInspector();
    const file = await uploads.store(upload, objectKeyOf(principal.companyId, importId), {
      stream: inspector,
      dataRows: () => inspector.result().dataRows,
    });
    return { importId, ...file };
  }

  /** Removes a received file that will not be imported (a replayed Idempotency-Key, a file the person dropped). */
  async function discard(file: ReceivedFile): Promise<void> {
    await uploads.discard(file);
  }

  /**
   * A received file waits for the person's confirmation (the dashboard's "import this file
   * again?"): unless started or discarded before, it is deleted 24 hours after (`purgeAbandoned`).
   */
  async function hold(principal: Principal, file: ReceivedFile): Promise<void> {
    await repos.pendingUploads.note(file.objectKey, principal.companyId, (deps.now ?? Date.now)());
  }

  /** The person confirmed a held file: it is no longer waiting (it is started, or discarded, next). */
  async function release(file: ReceivedFile): Promise<void> {
    await repos.pendingUploads.forget(file.objectKey);
  }

  /** Deletes the files held for a confirmation that never came, uploaded before `before` (ms); how many. */
  async function purgeAbandoned(before: number): Promise<number> {
    let removed = 0;
    for (;;) {
      const keys = await repos.pendingUploads.expired(before, 1000);
      for (const key of keys) {
        await storage.delete(key).catch((err: unknown) => {
          if (!(err instanceof ObjectNotFound)) throw err;
        });
        await repos.pendingUploads.forget(key);
        removed++;
      }
      if (keys.length < 1000) return removed;
    }
  }

  /** Records the import (queued) and enqueues its job; when the queue fails, nothing is left behind. */
  async function start(principal: Principal, file: ReceivedFile): Promise<ImportRecord> {
    try {
      await repos.imports.insert({
        id: file.importId,
        companyId: principal.companyId,
        fileName: file.fileName,
        objectKey: file.objectKey,
        sizeBytes: file.size,
        rowsTotal: file.dataRows,
        sha256: file.sha256,
      });
    } catch (err) {
      // Not recorded (the database is unreachable or full): the file would belong to no import.
      await deleteObject(storage, file.objectKey);
      throw err;
    }
    try {
      // Counted after the insert, so this import is one of them. Two uploads of one company at
      // the same moment may get the same rank: they are then taken in the order queued.
      const rank = await repos.imports.countUnfinished(principal.companyId);
      await queue.enqueue(file.importId, rank);
    } catch (err) {
      await repos.imports.delete(file.importId);
      await deleteObject(storage, file.objectKey);
      if (err instanceof QueueUnavailable) throw new AppError('UNAVAILABLE', importMessages.unavailable);
      throw err;
    }
    return (await repos.imports.findById(file.importId))!;
  }

  /** The import once its job has settled, or as it stands when `timeoutMs` ran out. */
  async function waitForResult(principal: Principal, importId: string, timeoutMs: number): Promise<ImportRecord> {
    await queue.waitFor(importId, timeoutMs);
    return get(principal, importId);
  }

  /** An import of the caller's company; another company's import is "not found". */
  async function get(principal: Principal, importId: string): Promise<ImportRecord> {
    const run = isUuid(importId) ? await repos.imports.findForCompany(principal.companyId, importId) : undefined;
    if (!run) throw new AppError('NOT_FOUND', importMessages.notFound, undefined, 'import_not_found');
    return run;
  }

  async function list(principal: Principal, opts: { cursor?: string | undefined; limit: number }) {
    const rows = await repos.imports.listByCompany(principal.companyId, pageRequest(opts));
    return pageOf(rows, opts.limit, (run) => run);
  }

  const outcomeOf = (run: ImportRecord, alreadyDone: boolean): ProcessOutcome => ({
    importId: run.id,
    status: run.status,
    imported: run.imported ?? 0,
    failed: run.failed ?? 0,
    alreadyDone,
  });

  /**
   * Runs an import, chunk by chunk: each chunk of IMPORT_CHUNK_SIZE rows commits in a transaction
   * of its own with its ledger entry, up to IMPORT_WRITERS of them side by side. A run that starts
   * again (a killed worker, a restarted database, a retry) reads the ledger and writes the chunks
   * it does not have, whichever they are, so every row is written exactly once; the summary is
   * built from the ledger. Reading, parsing and validating the next chunk overlap with the writes;
   * at most one chunk waits for its turn, so memory stays bounded whatever the file's size. The claims stay invisible until the import is
   * completed (their import's status decides), and a failed or cancelled import's claims are
   * removed afterwards.
   */
  async function process(importId: string, opts: { onProgress?: (p: ImportProgress) => Promise<void> } = {}): Promise<ProcessOutcome> {
    const found = await repos.imports.findById(importId);
    if (!found) throw new ImportGone('The import no longer exists.');
    if (isTerminal(found.status)) return outcomeOf(found, true);
    const run = await machine.start(importId);
    if (!run) return outcomeOf((await repos.imports.findById(importId)) ?? found, true);
    return settle(importId, await rideOutStorage(run, opts.onProgress, (onProgress) => runChunks(run, onProgress)));
  }

  /**
   * Runs `work` (a run of the import's chunks), waiting out an outage of the storage: the file is
   * opened again after a backoff and the run goes on after its committed chunks, for up to
   * STORAGE_RETRY_SECONDS from the outage's start, counting no attempt of the import's. Meanwhile
   * the import's message and the job's progress say that it waits for storage. Longer, it throws
   * StorageOutage (the import then fails, saying why).
   */
  async function rideOutStorage<T>(
    run: ImportRecord,
    onProgress: ((p: ImportProgress) => Promise<void>) | undefined,
    work: (onProgress: (p: ImportProgress) => Promise<void>) => Promise<T>,
  ): Promise<T> {
    const clock = storageOutageClock({ retryMs: limits.storageRetryMs ?? 300_000 });
    let last: ImportProgress = { rows_done: run.rowsDone, rows_total: run.rowsTotal };
    const back = async () => {
      if (!clock.waiting) return;
      clock.ok();
      await repos.imports.setMessage(run.id, null);
    };
    for (;;) {
      try {
        const result = await work(async (p) => {
          last = p;
          await back();
          await onProgress?.(p);
        });
        await back();
        return result;
      } catch (err) {
        if (!(err instanceof StorageUnavailable)) throw err;
        const first = !clock.waiting;
        const wait = clock.failed(err);
        if (first) {
          await repos.imports.setMessage(run.id, importMessages.waitingForStorage);
          await onProgress?.({ ...last, waiting_for: 'storage' });
        }
        await sleep(wait);
      }
    }
  }

  /**
   * A file larger than `splitBytes` is cut into ranges of whole chunks (range-plan.ts), each run
   * by `processRange` as a job of its own, by whichever worker is free; `finishRanges` then
   * completes the import once every range has settled. This first step starts the run and plans
   * the ranges; a smaller file is imported whole (`process`).
   */
  async function split(importId: string, splitBytes: number): Promise<SplitPlan> {
    const found = await repos.imports.findById(importId);
    if (!found) throw new ImportGone('The import no longer exists.');
    if (isTerminal(found.status)) return { kind: 'done', outcome: outcomeOf(found, true) };
    if (splitBytes <= 0 || found.sizeBytes <= splitBytes) return { kind: 'whole' };
    const run = await machine.start(importId);
    if (!run) return { kind: 'done', outcome: outcomeOf((await repos.imports.findById(importId)) ?? found, true) };
    return rideOutStorage(run, undefined, async () => {
      const source = await openFile(run);
      try {
        const count = Math.ceil(run.sizeBytes / splitBytes);
        return {
          kind: 'ranges' as const,
          ranges: await planRanges(readImportRows(source), { chunkSize: limits.chunkSize, rowsTotal: run.rowsTotal, count }),
        };
      } finally {
        source.destroy();
      }
    });
  }

  /**
   * One range of a split file: its chunks that the ledger does not have, each written once the
   * chunks of earlier ranges it needs have committed. Leaves the import processing (or as a cancel
   * or a failure left it): `finishRanges` moves it on.
   */
  async function processRange(
    importId: string,
    range: ImportRange,
    opts: { onProgress?: (p: ImportProgress) => Promise<void> } = {},
  ): Promise<ProcessOutcome> {
    const run = await repos.imports.findById(importId);
    if (!run) throw new ImportGone('The import no longer exists.');
    if (isTerminal(run.status) || run.cancelRequested) return outcomeOf(run, true);
    const stopped = await rideOutStorage(run, opts.onProgress, (onProgress) => runChunks(run, onProgress, range));
    return { ...outcomeOf(run, false), status: stopped ?? 'processing' };
  }

  /** Every range of a split file has settled: the import completes (or is cancelled), as `process` ends. */
  async function finishRanges(importId: string): Promise<ProcessOutcome> {
    const run = await repos.imports.findById(importId);
    if (!run) throw new ImportGone('The import no longer exists.');
    if (isTerminal(run.status)) return outcomeOf(run, true);
    return settle(importId, run.cancelRequested ? 'cancelled' : undefined);
  }

  async function openFile(run: ImportRecord): Promise<Readable> {
    try {
      return await storage.getStream(run.objectKey);
    } catch (err) {
      if (err instanceof ObjectNotFound) throw new ImportGone('The uploaded file is no longer in storage.');
      throw err;
    }
  }

  /** Writes the run's chunks still missing (of `range` only, when given); the status that stopped it early, if one did. */
  async function runChunks(
    run: ImportRecord,
    onProgress: ((p: ImportProgress) => Promise<void>) | undefined,
    range?: ImportRange,
  ): Promise<ImportStatus | undefined> {
    const committed = await repos.ledger.committed(run.id);
    const source = await openFile(run);
    try {
      return await importChunks(run, source, committed, onProgress, range);
    } finally {
      source.destroy();
    }
  }

  /** The run's chunks have all settled: the import moves on as `stopped` says (completed when nothing stopped it). */
  async function settle(importId: string, stopped: ImportStatus | undefined): Promise<ProcessOutcome> {
    if (stopped !== undefined) {
      // Asked while chunks were in flight: moved now that every one of them has settled.
      if (stopped === 'cancelled') await machine.cancel(importId);
      const now = (await repos.imports.findById(importId))!;
      if (now.status === 'cancelled' || now.status === 'failed') await cleanUp(now);
      return outcomeOf(now, false);
    }
    const done = await machine.complete(importId);
    const now = done ?? (await repos.imports.findById(importId))!;
    await cleanUp(now);
    return outcomeOf(now, done === undefined);
  }

  /**
   * Writes the file's chunks that the ledger does not have, up to `writers` at a time (reader,
   * order and writer: chunk-reader.ts, chunk-scheduler.ts, chunk-writer.ts); the status that
   * stopped the run early, if one did.
   */
  async function importChunks(
    run: ImportRecord,
    source: Readable,
    committed: CommittedChunk[],
    onProgress: ((p: ImportProgress) => Promise<void>) | undefined,
    range?: ImportRange,
  ): Promise<ImportStatus | undefined> {
    const chunks = readChunks(source, {
      size: limits.chunkSize,
      committed,
      today: today(),
      documentsOf: deps.documentsOf,
      ...(range ? { range } : {}),
    });
    const waitFor = new Map(range?.waitFor);
    let rowsDone = committed.reduce((sum, c) => sum + c.rowsDone, 0);
    // Side by side, each chunk's persons' transaction follows the one before it (`personsInTurn`).
    let persons: Promise<PersonsResult | undefined> = Promise.resolve(undefined);
    const pending = { checks: 0 };
    for await (const written of writeChunks<ReadChunk, Written>(chunks, writers, async (chunk, next, earlier) => {
      const before = waitFor.get(chunk.no);
      if (writers > 1) {
        // Chained before any await: the persons' transactions go in file order.
        persons = personsInTurn(run, chunk, persons, before, earlier.length === 0, pending);
        return claimsOf(run, chunk, persons, pending);
      }
      if (before) await earlierRanges(run.id, before);
      // After such a wait, the look-up made ahead (before those chunks committed) is out of date.
      return writeInTurn(run, chunk, next, earlier, before !== undefined);
    })) {
      const { result } = written;
      if (result.kind === 'superseded') throw new ImportBusy();
      if (result.kind === 'stopped') return result.status ?? 'failed';
      rowsDone += written.rows;
      await onProgress?.({ rows_done: rowsDone, rows_total: Math.max(run.rowsTotal, rowsDone) });
    }
    return undefined;
  }

  /**
   * Chunks side by side (IMPORT_WRITERS > 1): a chunk's persons are decided and committed once the
   * chunk before it has committed its own (`previous`), and not before the chunks of earlier
   * ranges it needs (`before`, a split file) have committed; then its claims are written whenever
   * a writer is free, whatever the other chunks do. So who a person is stays as in file order,
   * and no chunk waits for another's claims. A chunk whose predecessor failed or was stopped does
   * not decide its persons at all (a later row could otherwise create a person an earlier row
   * would have decided otherwise). `pending` counts the identity checks planned by chunks whose
   * claims are not committed yet: they count against the company's budget as if they were.
   */
  function personsInTurn(
    run: ImportRecord,
    chunk: ReadChunk,
    previous: Promise<PersonsResult | undefined>,
    before: number[] | undefined,
    first: boolean,
    pending: { checks: number },
  ): Promise<PersonsResult> {
    return previous.then(async (last) => {
      if (last?.kind === 'stopped') return last;
      if (before) await earlierRanges(run.id, before);
      if (first) await repos.imports.setColumns(run.id, chunk.columns);
      const result = await writer.commitPersons(run, chunk, pending.checks);
      if (result.kind === 'planned') pending.checks += result.planned.checks.length;
      return result;
    });
  }

  /** A chunk's claims, once its persons are committed (`personsInTurn`). */
  async function claimsOf(
    run: ImportRecord,
    chunk: ReadChunk,
    persons: Promise<PersonsResult | undefined>,
    pending: { checks: number },
  ): Promise<Written> {
    const decided = (await persons)!;
    if (decided.kind === 'stopped') return { no: chunk.no, rows: chunk.count, result: decided };
    try {
      const result = await writer.commitClaims(run, chunk, chunk.columns, decided.planned);
      if (result.kind === 'written') deps.afterChunkCommit?.(chunk.no);
      return { no: chunk.no, rows: chunk.count, result };
    } finally {
      pending.checks -= decided.planned.checks.length;
    }
  }

  /**
   * One chunk's write, once the scheduler gives it its turn (one writer: its persons and claims in
   * one transaction, once the chunk before it has settled); a person that anyone else creates
   * meanwhile makes its write lose the race on the documents' unique key, and it runs again,
   * finding them. The
   * documents of the next chunk are looked up while this one is written (`lookAhead`): on a
   * connection of their own, or in this chunk's transaction where there is one session.
   */
  async function writeInTurn(
    run: ImportRecord,
    chunk: ReadChunk,
    next: ReadChunk | undefined,
    earlier: readonly Started<ReadChunk, Written>[],
    lookUpAgain = false,
  ): Promise<Written> {
    // Requests that waited for the chunk just written go first: their next statements queue ahead
    // of this chunk's (embedded, PGlite runs one statement at a time).
    await yieldToEventLoop();
    if (earlier.length === 0) await repos.imports.setColumns(run.id, chunk.columns);
    const known = writers === 1 && !lookUpAgain ? await lookedUpBefore(chunk, earlier.at(-1)) : undefined;
    const nextDocuments = writers === 1 && next && next.inputs.length > 0 ? next.documents : undefined;
    const { lookupOutside } = deps.writeClaims;
    const outside = nextDocuments && lookupOutside ? lookAhead(lookupOutside, nextDocuments) : undefined;
    const result = await writer.commit(run, chunk, chunk.columns, known, outside ? undefined : nextDocuments);
    if (result.kind === 'written') deps.afterChunkCommit?.(chunk.no);
    const ahead = outside ?? (result.kind === 'written' && result.next ? lookedUp(result.next) : undefined);
    return { no: chunk.no, rows: chunk.count, result, ...(ahead && next ? { ahead: { for: next.no, found: ahead } } : {}) };
  }

  /**
   * Waits until the chunks `before` (of earlier ranges) have committed, or the import has been
   * stopped (the chunk's own lock then says so). Gives up after RANGE_WAIT_MS: the range they
   * belong to may be waiting for a worker that this one holds.
   */
  async function earlierRanges(importId: string, before: number[]): Promise<void> {
    const started = Date.now();
    for (;;) {
      const done = new Set((await repos.ledger.committed(importId)).map((c) => c.chunkNo));
      if (before.every((no) => done.has(no))) return;
      const run = await repos.imports.findById(importId);
      if (!run || run.status !== 'processing' || run.cancelRequested) return;
      if (Date.now() - started > RANGE_WAIT_MS) throw new RangeWaiting();
      await new Promise((resolve) => setTimeout(resolve, RANGE_POLL_MS));
    }
  }

  /** `chunk`'s documents as looked up while `previous` (settled) was written, with the persons it wrote. */
  async function lookedUpBefore(chunk: ReadChunk, previous: Started<ReadChunk, Written> | undefined) {
    const before = await previous?.done;
    if (!before?.ahead || before.ahead.for !== chunk.no || before.result.kind !== 'written') return undefined;
    return before.ahead.found.settle(before.result.known);
  }

  /** After a terminal status: the file goes (it holds personal data), and a failed or cancelled import's claims. */
  async function cleanUp(run: ImportRecord): Promise<void> {
    if (!isTerminal(run.status)) return;
    await deleteObject(storage, run.objectKey);
    if (run.status !== 'completed') await purge(run.id, run.companyId);
    else await repos.imports.forgetPersons(run.id);
  }

  /** Removes the claims of a failed or cancelled import, in batches (they were never visible). */
  async function purge(importId: string, companyId: string): Promise<void> {
    const batch = deps.purgeBatch ?? 5000;
    while ((await repos.imports.purgeClaims(importId, companyId, batch)) > 0) await yieldToEventLoop();
    // Then the persons it created that are left without a claim (a submission's claim keeps one).
    await repos.imports.purgePersons(importId);
    await repos.imports.markPurged(importId);
  }

  /** Failed or cancelled imports whose claims a stopped process did not finish removing. */
  async function purgeLeftovers(): Promise<number> {
    const left = await repos.imports.listToPurge(100);
    for (const run of left) await purge(run.id, run.companyId);
    return left.length;
  }

  /** A job that failed for good: the import moves to failed, its file and its written claims go. */
  async function markFailed(importId: string, failure: ImportFailure, message: string): Promise<void> {
    await machine.fail(importId, failure, message);
    const run = await repos.imports.findById(importId);
    if (run && run.status === 'failed') await cleanUp(run);
  }

  /**
   * POST /imports/{id}/cancel. Queued: cancelled at once (200). Processing: recorded (202); each
   * chunk that locks after it rolls back, and the run moves the import to cancelled once every
   * chunk in flight has settled. Completed or failed: 409.
   */
  async function cancel(
    principal: Principal,
    importId: string,
    by: { actor?: AuditActor; origin?: AuditOrigin } = {},
  ): Promise<{ run: ImportRecord; accepted: boolean }> {
    const origin = by.origin ?? NO_ORIGIN;
    const recordCancel = (tx: Tx) =>
      tx.audit.record({
        companyId: principal.companyId,
        action: 'import.cancelled',
        actor: by.actor ?? actorOf(principal),
        target: { type: 'import', id: importId, name: run.fileName },
        ip: origin.ip,
        requestId: origin.requestId,
      });
    const run = await get(principal, importId);
    if (run.status === 'completed' || run.status === 'failed')
      throw new AppError('CONFLICT', importMessages.alreadyFinished, undefined, 'import_finished');
    if (run.status === 'cancelled') return { run, accepted: false };
    const result = await repos.transaction(async (tx) => {
      const state = await tx.imports.lock(importId);
      if (!state || state.companyId !== principal.companyId) return undefined;
      if (state.status === 'queued') {
        await recordCancel(tx);
        return { moved: await machine.transition(tx, importId, 'cancelled'), accepted: false };
      }
      if (state.status === 'processing') {
        await tx.imports.requestCancel(importId);
        await recordCancel(tx);
        return { moved: undefined, accepted: true };
      }
      return { moved: undefined, accepted: false };
    });
    const now = await get(principal, importId);
    if (!result) throw new AppError('NOT_FOUND', importMessages.notFound, undefined, 'import_not_found');
    if (now.status === 'completed' || now.status === 'failed')
      throw new AppError('CONFLICT', importMessages.alreadyFinished, undefined, 'import_finished');
    if (result.moved) await deleteObject(storage, now.objectKey);
    return { run: now, accepted: result.accepted };
  }

  /**
   * A dry run (`?dry_run=true`): every row of the received file is validated and resolved exactly
   * as a real import would, identity rules against the stored persons included, in one
   * transaction that is rolled back at the end. It writes no claim, no person and no import; the
   * file is removed. The summary is the one a real import would give now.
   */
  async function dryRun(principal: Principal, file: ReceivedFile): Promise<{ imported: number; failed: number; errors: RowError[] }> {
    const day = today();
    const errors: RowError[] = [];
    let imported = 0;
    let source: Readable | undefined;
    // The mismatches told, written in the transaction (so that later chunks count them against the
    // budget) and, since that one is rolled back, committed again at the end, before the answer.
    const told: IdentityCheck[] = [];
    const events: AuditEventInput[] = [];
    try {
      source = await storage.getStream(file.objectKey);
      const rows = readImportRows(source);
      await repos
        .transaction(async (tx) => {
          let chunk: ImportRow[] = [];
          let no = 0;
          const check = async () => {
            const prepared = await prepareChunk(no++, chunk, day, deps.documentsOf);
            chunk = [];
            const outcomes =
              prepared.inputs.length === 0
                ? []
                : await withRetries(() =>
                    tx.savepoint(async () => {
                      const known = await deps.writeClaims.lookup(tx, prepared.documents);
                      const {
                        outcomes,
                        written,
                        checks,
                        events: limited,
                      } = await deps.writeClaims.write(tx, principal.companyId, prepared.inputs, file.importId, prepared.documents, known);
                      await written;
                      told.push(...checks.map((c) => ({ ...c, tokenId: principal.tokenId, userId: principal.userId })));
                      events.push(...limited);
                      return outcomes;
                    }),
                  );
            const entry = ledgerEntry(file.importId, prepared, outcomes, null);
            imported += entry.imported;
            for (const e of entry.errorsJson) errors.push(JSON.parse(e) as RowError);
          };
          for await (const row of rows) {
            chunk.push(row);
            if (chunk.length >= limits.chunkSize) await check();
          }
          if (chunk.length > 0) await check();
          throw new DryRunRollback();
        })
        .catch((err: unknown) => {
          if (!(err instanceof DryRunRollback)) throw err;
        });
      // A dry run writes nothing but the identity checks it made (and the audit event of a budget
      // they used up): answered once they are committed.
      if (events.length > 0) {
        await repos.transaction(async (tx) => {
          await tx.identityChecks.append(told);
          for (const e of events) await tx.audit.record(e);
        });
      } else await repos.identityChecks.append(told);
    } finally {
      source?.destroy();
      await deleteObject(storage, file.objectKey);
    }
    return { imported, failed: errors.length, errors: errors.map((e) => ({ row: e.row, messages: byColumn(e.messages) })) };
  }

  /**
   * The rejected rows as the caller uploaded them, in row order, a page at a time from the ledger:
   * the file's columns in their order (id_number left empty), then the row number and the
   * messages. Nothing is held in memory beyond a page.
   */
  async function failedRows(principal: Principal, importId: string) {
    const run = await get(principal, importId);
    const columns = run.columns ?? [...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS];
    async function* rows(): AsyncGenerator<string[]> {
      let after = 0;
      for (;;) {
        const page = await repos.ledger.failedRows(importId, after, 1000);
        for (const r of page) {
          const cells = columns.map((_, i) => r.cells[i] ?? '');
          const errors = Object.entries(byColumn(r.messages))
            .flatMap(([field, list]) => list.map((m) => `${field}: ${m}`))
            .join('; ');
          yield [...cells, String(r.row), errors];
        }
        if (page.length < 1000) return;
        after = page.at(-1)!.row;
      }
    }
    return { run, header: [...columns, 'row', 'errors'], rows: rows() };
  }

  /**
   * In-process mode: imports a stopped server left queued or processing run again (they resume
   * after their last committed chunk). With BullMQ the jobs wait in Redis and need nothing.
   */
  async function resumeUnfinished(): Promise<number> {
    await purgeLeftovers();
    if (queue.kind !== 'in-process') return 0;
    const unfinished = await repos.imports.listUnfinished();
    // Ranked per company in the order they were uploaded, as at their upload (see ImportQueue).
    const ranks = new Map<string, number>();
    for (const { id, companyId } of unfinished) {
      const rank = (ranks.get(companyId) ?? 0) + 1;
      ranks.set(companyId, rank);
      await queue.enqueue(id, rank);
    }
    return unfinished.length;
  }

  return {
    receive,
    discard,
    start,
    waitForResult,
    get,
    list,
    process,
    split,
    processRange,
    finishRanges,
    markFailed,
    cancel,
    dryRun,
    hold,
    release,
    purgeAbandoned,
    failedRows,
    purgeLeftovers,
    resumeUnfinished,
  };
}
export type ImportService = ReturnType<typeof createImportService<ImportTx>>;

/** Column order for the messages of a row (the database keeps JSON object keys in its own order). */
const COLUMN_ORDER = new Map<string, number>(['row', ...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS].map((c, i) => [c, i]));
/** A row's messages with their columns in the file's order (row, then the columns as documented). */
export const byColumn = (messages: Record<string, string[]>) =>
  Object.fromEntries(Object.entries(messages).sort(([a], [b]) => (COLUMN_ORDER.get(a) ?? 99) - (COLUMN_ORDER.get(b) ?? 99)));
