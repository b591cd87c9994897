import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';

import type { ImportFailure, ImportRecord, ImportSummary, RowError } from '../../db/import-repository';
import type { Store } from '../../db/store';
import { ObjectNotFound, ObjectTooLarge, StorageTimeout, type ObjectStore } from '../../storage/object-store';
import type { ClaimInput } from '../claims/claim';
import { validateClaimInput } from '../claims/claim';
import { withRetries, type ClaimService } from '../claims/claim-service';
import { AppError, validationError } from '../errors';
import { decodeCursor, encodeCursor, invalidCursorMessage } from '../cursor';
import { isUuid } from '../ids';
import type { Principal } from '../principal';
import { enqueueWebhookEvent } from '../webhooks/webhook-service';
import {
  checkFileName,
  createFileInspector,
  fileMessages,
  InvalidImportFile,
  OPTIONAL_COLUMNS,
  readImportRows,
  REQUIRED_COLUMNS,
  sanitizeFileName,
  toColumnErrors,
  type ImportRow,
} from './csv-file';

/**
 * Where import jobs go: BullMQ on Redis (separate worker processes) or the in-process runner.
 * Either way the job carries only the import's id; the imports row is the source of truth.
 */
export interface ImportQueue {
  readonly kind: 'bullmq' | 'in-process';
  /** False when no job can be taken right now (Redis unreachable): the API answers 503 at once. */
  available(): boolean;
  /** Rejects with QueueUnavailable, quickly, when the job cannot be queued. */
  enqueue(importId: string): Promise<void>;
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
/** Another transaction is processing this import right now (a redelivered job): try again later. */
export class ImportBusy extends Error {
  constructor() {
    super('The import is being processed by another worker');
    this.name = 'ImportBusy';
  }
}
class AlreadyCompleted extends Error {}

export const importMessages = {
  unavailable: 'Imports are unavailable right now (the job queue cannot be reached); nothing was imported. Try again later.',
  storageTimeout: 'The file could not be stored in time; nothing was imported. Try again.',
  failed: 'The import could not be completed; nothing was imported. Try again later.',
  notFound: 'Import not found.',
  finished: (imported: number, failed: number) => `Import finished: ${imported} imported, ${failed} failed.`,
} as const;

export type ReceivedFile = { importId: string; objectKey: string; fileName: string; size: number; sha256: string; dataRows: number };
export type Upload = { fileName: string | undefined; stream: Readable; truncated: () => boolean };
export type ImportProgress = { rows_done: number; rows_total: number };
export type ProcessOutcome = { importId: string; status: 'completed'; imported: number; failed: number; alreadyDone: boolean };

export type ImportServiceDeps = {
  store: Pick<Store, 'imports' | 'transaction'>;
  claims: Pick<ClaimService, 'storeBatch'>;
  storage: ObjectStore;
  queue: ImportQueue;
  today: () => string;
  limits: { maxBytes: number; chunkSize: number; uploadTimeoutMs: number };
  /**
   * PostgreSQL: progress is written to the imports row from another connection while the
   * import's transaction runs. PGlite has one connection, blocked by that transaction, so there
   * progress is only reported to the job.
   */
  progressInDatabase: boolean;
};

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export function createImportService(deps: ImportServiceDeps) {
  const { store, claims, storage, queue, today, limits } = deps;
  const objectKeyOf = (companyId: string, importId: string) => `imports/${companyId}/${importId}`;

  /**
   * Streams the upload through the inspector into storage. Every file-level problem is a 422
   * before any row is processed, and leaves nothing stored.
   */
  async function receive(principal: Principal, upload: Upload): Promise<ReceivedFile> {
    const badName = checkFileName(upload.fileName);
    if (badName) throw validationError({ file: [badName] });
    if (!queue.available()) throw new AppError('UNAVAILABLE', importMessages.unavailable);
    const importId = randomUUID();
    const objectKey = objectKeyOf(principal.companyId, importId);
    const inspector = createFileInspector();
    upload.stream.on('error', (err) => inspector.destroy(err));
    // The upload flows as soon as it is piped, possibly before storage attaches its own handlers
    // (while it creates a folder or a bucket): an early rejection stays on the stream, where the
    // storage write finds it, instead of being thrown as an unhandled 'error' event.
    inspector.on('error', () => {});
    try {
      await storage.putStream(objectKey, upload.stream.pipe(inspector), {
        // One byte over the limit tells "too large" apart from "exactly at the limit".
        maxBytes: limits.maxBytes + 1,
        timeoutMs: limits.uploadTimeoutMs,
      });
    } catch (err) {
      // Let the rest of the upload drain, so the client gets the answer rather than a reset.
      upload.stream.unpipe(inspector);
      upload.stream.resume();
      if (upload.truncated() || err instanceof ObjectTooLarge) throw validationError({ file: [fileMessages.tooLarge(limits.maxBytes)] });
      if (err instanceof InvalidImportFile) throw validationError(err.fields);
      if (err instanceof StorageTimeout) throw new AppError('UNAVAILABLE', importMessages.storageTimeout);
      throw err;
    }
    if (upload.truncated()) {
      await storage.delete(objectKey);
      throw validationError({ file: [fileMessages.tooLarge(limits.maxBytes)] });
    }
    const file = inspector.result();
    return { importId, objectKey, fileName: sanitizeFileName(upload.fileName), size: file.size, sha256: file.sha256, dataRows: file.dataRows };
  }

  /** Removes a received file that will not be imported (a replayed Idempotency-Key). */
  async function discard(file: ReceivedFile): Promise<void> {
    await storage.delete(file.objectKey);
  }

  /** Records the import (queued) and enqueues its job; when the queue fails, nothing is left behind. */
  async function start(principal: Principal, file: ReceivedFile): Promise<ImportRecord> {
    await store.imports.insert({
      id: file.importId,
      companyId: principal.companyId,
      fileName: file.fileName,
      objectKey: file.objectKey,
      sizeBytes: file.size,
      rowsTotal: file.dataRows,
    });
    try {
      await queue.enqueue(file.importId);
    } catch (err) {
      await store.imports.delete(file.importId);
      await storage.delete(file.objectKey).catch(() => {});
      if (err instanceof QueueUnavailable) throw new AppError('UNAVAILABLE', importMessages.unavailable);
      throw err;
    }
    return (await store.imports.findById(file.importId))!;
  }

  /** The import once its job has settled, or as it stands when `timeoutMs` ran out. */
  async function waitForResult(principal: Principal, importId: string, timeoutMs: number): Promise<ImportRecord> {
    await queue.waitFor(importId, timeoutMs);
    return get(principal, importId);
  }

  /** An import of the caller's company; another company's import is "not found". */
  async function get(principal: Principal, importId: string): Promise<ImportRecord> {
    const run = isUuid(importId) ? await store.imports.findForCompany(principal.companyId, importId) : undefined;
    if (!run) throw new AppError('NOT_FOUND', importMessages.notFound);
    return run;
  }

  async function list(principal: Principal, opts: { cursor?: string | undefined; limit: number }) {
    let after: { ts: string; id: string } | undefined;
    if (opts.cursor) {
      after = decodeCursor(opts.cursor);
      if (!after) throw validationError({ cursor: [invalidCursorMessage] });
    }
    const rows = await store.imports.listByCompany(principal.companyId, { after, limit: opts.limit + 1 });
    const page = rows.slice(0, opts.limit);
    return { data: page, nextCursor: rows.length > opts.limit ? encodeCursor(page.at(-1)!.cursor) : null };
  }

  /**
   * Runs an import: every claim of the file, and the import's final status and summary, are
   * written in ONE database transaction, with chunked set-based statements inside it.
   *
   * Why one transaction: a crash (a SIGKILLed worker, a lost connection) rolls everything back,
   * so a retry simply runs the file again from the start and the end state holds every valid row
   * exactly once with an exact summary; a file whose job fails for good leaves no claims. The
   * alternative, a transaction per chunk with a checkpoint, would make half-imported files
   * visible and need per-row deduplication on retry. The cost: the transaction holds its locks
   * (the new clients' documents) until the file is done, so an API submission of a person first
   * seen in a running import waits for it; and on PGlite, which has a single connection, the
   * transaction blocks every other query while it runs (acceptable for the embedded mode, which
   * is for trying the service and small single-node use).
   *
   * Each chunk runs in a savepoint and is retried alone when it lost a race for a new person to a
   * concurrent submission (RetryableConflict). The event loop gets a turn between chunks so that
   * the job's lock keeps being renewed. A second run of the same import waits on an advisory lock
   * (ImportBusy) and a completed import is never written again.
   */
  async function process(importId: string, opts: { onProgress?: (p: ImportProgress) => Promise<void> } = {}): Promise<ProcessOutcome> {
    const run = await store.imports.findById(importId);
    if (!run) throw new ImportGone('The import no longer exists.');
    if (run.status === 'completed') {
      return { importId, status: 'completed', imported: run.imported ?? 0, failed: run.failed ?? 0, alreadyDone: true };
    }
    if (run.status === 'failed') throw new ImportGone('The import has already failed for good.');
    await store.imports.markProcessing(importId);
    let source: Readable;
    try {
      source = await storage.getStream(run.objectKey);
    } catch (err) {
      if (err instanceof ObjectNotFound) throw new ImportGone('The uploaded file is no longer in storage.');
      throw err;
    }
    // The progress write needs a second pool connection and is never awaited: API submissions of
    // persons this import has just created wait for its commit while holding connections, and an
    // import waiting for one of those connections would never commit. One write at a time; a
    // report made while one is in flight is skipped (the next one carries newer figures).
    let progressWrite: Promise<void> | undefined;
    const report = async (done: number, total: number) => {
      if (deps.progressInDatabase && !progressWrite) {
        progressWrite = store.imports
          .setProgress(importId, done, total)
          .catch(() => {})
          .finally(() => {
            progressWrite = undefined;
          });
      }
      await opts.onProgress?.({ rows_done: done, rows_total: total });
    };
    let summary: ImportSummary;
    try {
      summary = await store.transaction(async (tx) => {
        if (!(await tx.imports.tryLock(importId))) throw new ImportBusy();
        const result = await importRows(tx, run, source, report);
        if (!(await tx.imports.complete(importId, result))) throw new AlreadyCompleted();
        // Webhook outbox (ops): written in the completion's transaction.
        await enqueueWebhookEvent(tx, {
          companyId: run.companyId,
          type: 'import.completed',
          key: `import.completed:${importId}`,
          payload: importEventPayload({ ...run, status: 'completed', imported: result.imported, failed: result.failed, rowsDone: result.rowsTotal, rowsTotal: result.rowsTotal, message: null }),
        });
        return result;
      });
    } catch (err) {
      if (!(err instanceof AlreadyCompleted)) throw err;
      const done = (await store.imports.findById(importId))!;
      return { importId, status: 'completed', imported: done.imported ?? 0, failed: done.failed ?? 0, alreadyDone: true };
    } finally {
      source.destroy();
    }
    // The file holds personal data: it is kept no longer than the import needs it.
    await storage.delete(run.objectKey).catch(() => {});
    return { importId, status: 'completed', imported: summary.imported, failed: summary.failed, alreadyDone: false };
  }

  type Tx = Parameters<Parameters<Store['transaction']>[0]>[0];

  async function importRows(tx: Tx, run: ImportRecord, source: Readable, report: (done: number, total: number) => Promise<void>): Promise<ImportSummary> {
    const principal = { companyId: run.companyId };
    const day = today(); // one "today" for the whole file
    // Kept as JSON text until the summary is written (half the memory of the objects).
    const errors: string[] = [];
    let imported = 0;
    let rowsDone = 0;

    /** Validation (CPU only): the rows to write, and a slot per row to report in row order. */
    const prepare = (rows: ImportRow[]) => {
      const inputs: ClaimInput[] = [];
      const slots: ({ row: number; index: number } | RowError)[] = [];
      for (const r of rows) {
        if ('errors' in r) {
          slots.push({ row: r.row, messages: toColumnErrors(r.errors) });
          continue;
        }
        const { value, errors: invalid } = validateClaimInput(r.body, day);
        if (value) slots.push({ row: r.row, index: inputs.push(value) - 1 });
        else slots.push({ row: r.row, messages: toColumnErrors(invalid) });
      }
      return { inputs, slots, count: rows.length };
    };

    /** One chunk's set-based write, in a savepoint, retried alone when it lost a race for a new person. */
    const write = async ({ inputs, slots, count }: ReturnType<typeof prepare>) => {
      const { outcomes } =
        inputs.length === 0
          ? { outcomes: [] }
          : await withRetries(() =>
              tx.savepoint(() => claims.storeBatch(tx, principal, inputs, 'bulk_import', run.id)),
            );
      for (const slot of slots) {
        if ('messages' in slot) {
          errors.push(JSON.stringify(slot));
          continue;
        }
        const outcome = outcomes[slot.index]!;
        if (outcome.ok) imported++;
        else errors.push(JSON.stringify({ row: slot.row, messages: toColumnErrors({ [outcome.field]: [outcome.message] }) }));
      }
      rowsDone += count;
      await report(rowsDone, Math.max(run.rowsTotal, rowsDone));
    };

    // Chunks are written one after the other (identities resolve in file order), while the next
    // chunk is read and validated during the previous chunk's database round trip.
    let inflight: Promise<void> = Promise.resolve();
    const dispatch = async (rows: ImportRow[]) => {
      const prepared = prepare(rows);
      await inflight;
      inflight = write(prepared);
      inflight.catch(() => {}); // awaited below; this only keeps it from counting as unhandled meanwhile
      await yieldToEventLoop();
    };
    try {
      let chunk: ImportRow[] = [];
      for await (const row of readImportRows(source)) {
        chunk.push(row);
        if (chunk.length >= limits.chunkSize) {
          await dispatch(chunk);
          chunk = [];
        }
      }
      if (chunk.length > 0) await dispatch(chunk);
      await inflight;
    } catch (err) {
      await inflight.catch(() => {});
      throw err;
    }
    return { imported, failed: errors.length, errorsJson: errors, rowsTotal: rowsDone };
  }

  /** A job that failed for good: the import is marked failed and its file removed. */
  async function markFailed(importId: string, failure: ImportFailure, message: string): Promise<void> {
    // Webhook outbox (ops): the event is written in the failure's transaction, once per import.
    const run = await store.transaction(async (tx) => {
      await tx.imports.fail(importId, failure, message);
      const failed = await tx.imports.findById(importId);
      if (failed?.status === 'failed') {
        await enqueueWebhookEvent(tx, { companyId: failed.companyId, type: 'import.failed', key: `import.failed:${importId}`, payload: importEventPayload(failed) });
      }
      return failed;
    });
    if (run && run.status === 'failed') await storage.delete(run.objectKey).catch(() => {});
  }

  /**
   * In-process mode: imports a stopped server left queued or processing are run again (their
   * transaction was rolled back). With BullMQ the jobs wait in Redis and need nothing.
   */
  async function resumeUnfinished(): Promise<number> {
    if (queue.kind !== 'in-process') return 0;
    const ids = await store.imports.listUnfinishedIds();
    for (const id of ids) await queue.enqueue(id);
    return ids.length;
  }

  return { receive, discard, start, waitForResult, get, list, process, markFailed, resumeUnfinished };
}
export type ImportService = ReturnType<typeof createImportService>;

/** Column order for the messages of a row (the database keeps JSON object keys in its own order). */
const COLUMN_ORDER = new Map<string, number>(['row', ...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS].map((c, i) => [c, i]));
const byColumn = (messages: Record<string, string[]>) =>
  Object.fromEntries(Object.entries(messages).sort(([a], [b]) => (COLUMN_ORDER.get(a) ?? 99) - (COLUMN_ORDER.get(b) ?? 99)));

/** The import resource as webhook events carry it (the list item's fields, without row errors). */
export function importEventPayload(run: Pick<ImportRecord, 'id' | 'status' | 'fileName' | 'sizeBytes' | 'rowsDone' | 'rowsTotal' | 'imported' | 'failed' | 'message' | 'createdAt'>) {
  return {
    id: run.id,
    status: run.status,
    file_name: run.fileName,
    size_bytes: run.sizeBytes,
    progress: { rows_done: run.rowsDone, rows_total: run.rowsTotal },
    imported: run.imported,
    failed: run.failed,
    message: run.status === 'completed' ? importMessages.finished(run.imported ?? 0, run.failed ?? 0) : run.message,
    created_at: run.createdAt,
    finished_at: new Date().toISOString().replace(/\.\d{3}Z$/u, '+00:00'),
  };
}

export function summaryOf(run: ImportRecord) {
  const imported = run.imported ?? 0;
  const failed = run.failed ?? 0;
  const errors = (run.errors ?? []).map((e) => ({ row: e.row, messages: byColumn(e.messages) }));
  return { message: importMessages.finished(imported, failed), imported, failed, errors };
}
