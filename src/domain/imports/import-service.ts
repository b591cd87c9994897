import { randomUUID } from 'node:crypto';

import { AppError } from '../errors';
import { pageOf, pageRequest } from '../paging';
import { isUuid } from '../ids';
import type { Principal } from '../principal';
import { actorOf, NO_ORIGIN, type AuditActor, type AuditOrigin } from '../audit/audit';
import { deleteObject, ObjectNotFound, type ObjectStore } from '../storage';
import { checkUpload, createUploads, type ContentCheck, type StoredFile, type Upload } from '../uploads/upload';
import { createFileInspector, OPTIONAL_COLUMNS, REQUIRED_COLUMNS } from './csv-file';
import { byColumn, importMessages } from './import-messages';
import { createImportRun, type ImportRunDeps } from './import-run';
import { createImportStateMachine } from './import-status';
import type { ImportRecord, ImportTx, RowError } from './ports';

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

export type ReceivedFile = StoredFile & { importId: string };

/** The run's own needs (import-run.ts), and what receiving and queueing files takes. */
export type ImportServiceDeps<Tx extends ImportTx> = Omit<ImportRunDeps<Tx>, 'machine' | 'limits'> & {
  storage: ObjectStore;
  queue: ImportQueue;
  /** The time (ms since the epoch); default: the real time. */
  now?: () => number;
  limits: ImportRunDeps<Tx>['limits'] & { maxBytes: number; uploadTimeoutMs: number };
  /**
   * The import file's content check, one per upload; default: the file inspector on this thread
   * (the server passes one on a thread of its own, src/workers/upload-inspection.ts).
   */
  fileCheck?: () => ContentCheck;
  /** Runs inside the transaction of every move into completed, failed or cancelled. */
  onTerminal?: (tx: Tx, run: ImportRecord) => Promise<void>;
};

/**
 * The imports as the API and the dashboard see them: receive a file (or hold it for a
 * confirmation), start it, read it, list them, cancel one, check a file without importing it,
 * read an import's failed rows. The run itself, which the jobs drive, is import-run.ts; its
 * members are the service's too.
 */
export function createImportService<Tx extends ImportTx>(deps: ImportServiceDeps<Tx>) {
  const { repos, storage, queue, limits } = deps;
  const machine = createImportStateMachine<Tx>({ repos, ...(deps.onTerminal ? { onTerminal: deps.onTerminal } : {}) });
  const runner = createImportRun<Tx>({ ...deps, machine });
  const objectKeyOf = (companyId: string, importId: string) => `imports/${companyId}/${importId}`;
  const uploads = createUploads({ storage, limits, pendingUploads: repos.pendingUploads });
  const fileCheck =
    deps.fileCheck ??
    ((): ContentCheck => {
      const inspector = createFileInspector();
      return { stream: inspector, dataRows: () => inspector.result().dataRows };
    });

  /**
   * Stores the upload (src/domain/uploads/upload.ts) through the import's file inspector. Every
   * file-level problem is a 422 before any row is processed, and leaves nothing stored.
   */
  async function receive(principal: Principal, upload: Upload): Promise<ReceivedFile> {
    checkUpload(upload);
    if (!queue.available()) throw new AppError('UNAVAILABLE', importMessages.unavailable);
    const importId = randomUUID();
    const file = await uploads.store(upload, objectKeyOf(principal.companyId, importId), fileCheck());
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
   * A dry run (`?dry_run=true`): the received file checked as a real import would be now, without
   * importing it (import-run.ts); the file is removed.
   */
  async function dryRun(principal: Principal, file: ReceivedFile): Promise<{ imported: number; failed: number; errors: RowError[] }> {
    try {
      return await runner.dryRun(principal, file);
    } finally {
      await deleteObject(storage, file.objectKey);
    }
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
    await runner.purgeLeftovers();
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

  const { process, markFailed, purgeLeftovers } = runner;
  return {
    receive,
    discard,
    start,
    waitForResult,
    get,
    list,
    process,
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
