import type { Readable } from 'node:stream';

import type { AuditEventInput } from '../audit/audit';
import type { IdentityCheck } from '../clients/identity-checks';
import type { Principal } from '../principal';
import { deleteObject, ObjectNotFound, sleep, storageOutageClock, StorageUnavailable, type ObjectStore } from '../storage';
import { createChunkRun, type ChunkRunDeps, type ImportProgress } from './chunk-run';
import { createChunkWriter, type ClaimWriter } from './chunk-writer';
import { yieldToEventLoop } from './csv-file';
import { byColumn, importMessages } from './import-messages';
import { isTerminal, type createImportStateMachine } from './import-status';
import type { ImportFailure, ImportRecord, ImportRepos, ImportStatus, ImportTx, RowError } from './ports';

/** The import row or its file is gone: retrying cannot help. */
export class ImportGone extends Error {
  constructor(what: string) {
    super(what);
    this.name = 'ImportGone';
  }
}

/** Thrown at the end of a dry run so that its transaction is rolled back. */
class DryRunRollback extends Error {}

export type ProcessOutcome = { importId: string; status: ImportStatus; imported: number; failed: number; alreadyDone: boolean };

/** A file to check without importing it (a dry run): the stored file, and the id it would be imported under. */
export type CheckedFile = { importId: string; objectKey: string; fileName: string; size: number; dataRows: number };

/** The identity checks and audit events a dry run's chunks wrote (and its rollback undoes). */
type Kept = { checks: IdentityCheck[]; events: AuditEventInput[] };

/** `writeClaims`, noting in `kept` the identity checks and events of each chunk's write once it is done. */
function keeping<Tx>(writeClaims: ClaimWriter<Tx>, kept: Kept): ClaimWriter<Tx> {
  // No look-up outside the transaction: it would not see the persons the dry run's earlier chunks created.
  const { lookupOutside: _, ...inside } = writeClaims;
  return {
    ...inside,
    write: async (...rows) => {
      const done = await writeClaims.write(...rows);
      const written = done.written.then((w) => {
        kept.checks.push(...done.checks);
        kept.events.push(...done.events);
        return w;
      });
      return { ...done, written };
    },
  };
}

/** What the write step needs (chunk-run.ts), less what the run makes of its own limits. */
export type ImportRunDeps<Tx extends ImportTx> = Omit<ChunkRunDeps<Tx>, 'repos' | 'writer' | 'writers' | 'chunkSize'> & {
  repos: ImportRepos<Tx>;
  machine: ReturnType<typeof createImportStateMachine<Tx>>;
  storage: ObjectStore;
  /** `writers`: IMPORT_WRITERS; `storageRetryMs`: STORAGE_RETRY_SECONDS (default 300 s). */
  limits: { chunkSize: number; writers?: number; storageRetryMs?: number };
  /** Awaited in a chunk's transaction before its write (crash tests: a chunk held open while later ones commit). */
  beforeChunkWrite?: (chunkNo: number) => Promise<void>;
  /** Called while a chunk's write runs in the database and this thread only waits for it (the heap trim). */
  whileChunkWrites?: () => void;
  /** Claims of a failed or cancelled import removed per statement. */
  purgeBatch?: number;
};

const outcomeOf = (run: ImportRecord, alreadyDone: boolean): ProcessOutcome => ({
  importId: run.id,
  status: run.status,
  imported: run.imported ?? 0,
  failed: run.failed ?? 0,
  alreadyDone,
});

/**
 * An import's run, from a job's point of view: start it, write
 * its chunks (chunk-run.ts), settle it (completed, cancelled or failed, and what each leaves
 * behind). A run that starts again (a killed worker, a restarted database, a retry) reads the
 * ledger and writes the chunks it does not have, so every row is written exactly once; the
 * summary is built from the ledger. The claims stay invisible until the import is completed
 * (their import's status decides), and a failed or cancelled import's claims and new persons are
 * removed afterwards. The dry run is the same run (the same write step and summary) in a
 * transaction rolled back at the end.
 */
export function createImportRun<Tx extends ImportTx>(deps: ImportRunDeps<Tx>) {
  const { repos, storage, machine, limits } = deps;
  const writer = createChunkWriter<Tx>({
    repos,
    writeClaims: deps.writeClaims,
    whileWriting: deps.whileChunkWrites,
    beforeWrite: deps.beforeChunkWrite,
  });
  const chunks = createChunkRun<Tx>({
    repos,
    writer,
    writeClaims: deps.writeClaims,
    documentsOf: deps.documentsOf,
    // One session (embedded): chunks in flight side by side would only take turns.
    writers: deps.writeClaims.lookupOutside ? (limits.writers ?? 1) : 1,
    chunkSize: limits.chunkSize,
    today: deps.today,
    afterChunkCommit: deps.afterChunkCommit,
  });

  /** Runs an import whole: starts it, writes its chunks still missing, settles it. */
  async function process(importId: string, opts: { onProgress?: (p: ImportProgress) => Promise<void> } = {}): Promise<ProcessOutcome> {
    const found = await repos.imports.findById(importId);
    if (!found) throw new ImportGone('The import no longer exists.');
    if (isTerminal(found.status)) return outcomeOf(found, true);
    const run = await machine.start(importId);
    if (!run) return outcomeOf((await repos.imports.findById(importId)) ?? found, true);
    return settle(importId, await rideOutStorage(run, opts.onProgress, (onProgress) => writeMissing(run, onProgress)));
  }

  /** The run's chunks the ledger lacks; the status that stopped it early, if one did. */
  async function writeMissing(
    run: ImportRecord,
    onProgress: ((p: ImportProgress) => Promise<void>) | undefined,
  ): Promise<ImportStatus | undefined> {
    const committed = await repos.ledger.committed(run.id);
    const source = await openFile(run);
    try {
      return await chunks.writeFile({ run, source, committed, onProgress });
    } finally {
      source.destroy();
    }
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

  async function openFile(run: ImportRecord): Promise<Readable> {
    try {
      return await storage.getStream(run.objectKey);
    } catch (err) {
      if (err instanceof ObjectNotFound) throw new ImportGone('The uploaded file is no longer in storage.');
      throw err;
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
    // The completion's match alerts probe the claims once per claim of the import: planned with statistics that count them.
    await repos.imports.refreshStatistics(importId);
    const done = await machine.complete(importId);
    const now = done ?? (await repos.imports.findById(importId))!;
    await cleanUp(now);
    return outcomeOf(now, done === undefined);
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
   * A dry run: the run itself, in one transaction rolled back at the end. The import is created
   * and started in it, its chunks are read, validated and written by the same write step, one at
   * a time, each chunk's transaction a savepoint of that one (so the documents are looked up where
   * the persons of the file's earlier rows are), and its summary is the completion's, from the
   * ledger: the one a real import would give now. No import, ledger entry, claim or person stays.
   * The identity checks it made are the only thing it keeps: written as a real run writes them (so
   * that later chunks count them against the company's budget) and, since those are rolled back,
   * committed again, as the caller's, before the answer.
   */
  async function dryRun(principal: Principal, file: CheckedFile): Promise<{ imported: number; failed: number; errors: RowError[] }> {
    const kept: Kept = { checks: [], events: [] };
    const writeClaims = keeping(deps.writeClaims, kept);
    let summary: ImportRecord | undefined;
    const source = await storage.getStream(file.objectKey);
    try {
      await repos
        .transaction(async (tx) => {
          const { importId: id, objectKey, fileName, size: sizeBytes, dataRows: rowsTotal } = file;
          await tx.imports.insert({ id, companyId: principal.companyId, fileName, objectKey, sizeBytes, rowsTotal });
          const run = (await tx.imports.transition(id, ['queued'], 'processing', { startAttempt: true }))!;
          const inTx = { imports: tx.imports, transaction: <T>(fn: (t: Tx) => Promise<T>) => tx.savepoint(() => fn(tx)) };
          const dry = createChunkRun<Tx>({
            repos: inTx,
            writer: createChunkWriter<Tx>({ repos: inTx, writeClaims }),
            writeClaims,
            documentsOf: deps.documentsOf,
            writers: 1,
            chunkSize: limits.chunkSize,
            today: deps.today,
          });
          await dry.writeFile({ run, source, committed: [] });
          summary = await tx.imports.transition(id, ['processing'], 'completed', { summaryFromLedger: true });
          throw new DryRunRollback();
        })
        .catch((err: unknown) => {
          if (!(err instanceof DryRunRollback)) throw err;
        });
      const told = kept.checks.map((c) => ({ ...c, tokenId: principal.tokenId, userId: principal.userId }));
      // Answered once the identity checks it made (and the audit event of a budget they used up) are committed.
      if (kept.events.length > 0) {
        await repos.transaction(async (tx) => {
          await tx.identityChecks.append(told);
          for (const e of kept.events) await tx.audit.record(e);
        });
      } else await repos.identityChecks.append(told);
    } finally {
      source.destroy();
    }
    const { imported, failed, errors } = summary!;
    return {
      imported: imported ?? 0,
      failed: failed ?? 0,
      errors: (errors ?? []).map((e) => ({ row: e.row, messages: byColumn(e.messages) })),
    };
  }

  return { process, markFailed, purgeLeftovers, dryRun };
}
