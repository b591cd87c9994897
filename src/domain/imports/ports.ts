/**
 * What the import domain needs of storage, declared here so that the domain depends on no driver:
 * src/db implements these interfaces (import-repository.ts, import-ledger-repository.ts).
 */

import type { AuditRepository } from '../audit/audit';
import type { IdentityCheckLog } from '../clients/identity-checks';
import type { PageRequest, Position } from '../paging';

export const IMPORT_STATUSES = ['queued', 'processing', 'completed', 'failed', 'cancelled'] as const;
export type ImportStatus = (typeof IMPORT_STATUSES)[number];
export type ImportFailure = 'invalid_file' | 'error';
export type RowError = { row: number; messages: Record<string, string[]> };
/** A change of status and when it happened (ISO 8601, UTC); `attempt` on each start of processing. */
export type HistoryEntry = { status: ImportStatus; at: string; attempt?: number };

export type ImportRecord = {
  id: string;
  companyId: string;
  status: ImportStatus;
  fileName: string;
  objectKey: string;
  sizeBytes: number;
  rowsTotal: number;
  rowsDone: number;
  imported: number | null;
  failed: number | null;
  errors: RowError[] | null;
  message: string | null;
  failure: ImportFailure | null;
  attempts: number;
  history: HistoryEntry[];
  cancelRequested: boolean;
  columns: string[] | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  position: Position;
};

/** What a status change writes beside the status itself. */
export type TransitionPatch = {
  /** processing: a new attempt starts (attempts + 1, rows_done from the ledger). */
  startAttempt?: boolean;
  /** completed: imported, failed, errors and rows from the ledger. */
  summaryFromLedger?: boolean;
  message?: string | null;
  failure?: ImportFailure | null;
};

export interface ImportRepositoryPort {
  insert(row: {
    id: string;
    companyId: string;
    fileName: string;
    objectKey: string;
    sizeBytes: number;
    rowsTotal: number;
    sha256?: string | undefined;
  }): Promise<void>;
  findById(id: string): Promise<ImportRecord | undefined>;
  findForCompany(companyId: string, id: string): Promise<ImportRecord | undefined>;
  listByCompany(companyId: string, opts: PageRequest): Promise<ImportRecord[]>;
  /** Queued and processing imports, oldest first, with their companies (what a stopped server left). */
  listUnfinished(): Promise<{ id: string; companyId: string }[]>;
  /** How many of the company's imports are queued or processing: an import's rank in the queue. */
  countUnfinished(companyId: string): Promise<number>;
  /**
   * Locks the import's row for the rest of the transaction against other status changes (not
   * against its chunks in flight: see lockShared); its status, whether a cancel was asked, and
   * where its ledger stands (the last committed chunk and the rows done up to it, if any).
   */
  lock(
    id: string,
  ): Promise<
    | { status: ImportStatus; cancelRequested: boolean; companyId: string; ledger: { chunkNo: number; rowsDone: number } | undefined }
    | undefined
  >;
  /**
   * Moves the import from one of `from` to `to`, appends the change to its history, and returns
   * the import as it now is; undefined when its status was not one of `from` (nothing written).
   */
  transition(id: string, from: readonly ImportStatus[], to: ImportStatus, patch: TransitionPatch): Promise<ImportRecord | undefined>;
  /**
   * A chunk's lock: shares the import's row with the other chunks in flight (they commit side by
   * side) and lets a cancel be asked meanwhile (chunks hold the row one after the other without a
   * gap: a lock that waited for them all would wait for the whole import); its status and whether
   * a cancel was asked. Only the run itself moves the import on, once its chunks have all settled.
   *
   * It also lets the chunk's transaction commit without waiting for its WAL flush
   * (synchronous_commit off). A chunk's claims commit with its ledger entry or not at all, and a
   * run that starts again writes whatever the ledger lacks, so a chunk lost to a crash of the
   * database is written again; the import's completion waits for its flush as every other
   * transaction does, and the WAL is flushed in order, so a completed import has all its chunks.
   */
  lockShared(id: string): Promise<{ status: ImportStatus; cancelRequested: boolean } | undefined>;
  /** Records the file's columns (once, before its first chunk), for the failed rows' file. */
  setColumns(id: string, columns: string[]): Promise<void>;
  /** The message of a processing import (a wait for storage; null when it is over). */
  setMessage(id: string, message: string | null): Promise<void>;
  requestCancel(id: string): Promise<void>;
  delete(id: string): Promise<void>;
  /** Failed or cancelled imports whose claims are not all removed yet. */
  listToPurge(limit: number): Promise<{ id: string; companyId: string }[]>;
  /** Deletes up to `batch` claims of the import; how many it deleted. */
  purgeClaims(id: string, companyId: string, batch: number): Promise<number>;
  /** Removes the persons the import created that are left without a claim (after purgeClaims); how many. */
  purgePersons(id: string): Promise<number>;
  /** Forgets which persons a completed import created. */
  forgetPersons(id: string): Promise<void>;
  markPurged(id: string): Promise<void>;
  /**
   * Before the completion of an import whose chunks are all written: brings the planner's
   * statistics of the claims up to date, where nothing else would (the embedded database runs no
   * autovacuum), once its rows are more than a tenth of the claims the statistics know of.
   * Whether it did.
   */
  refreshStatistics(id: string): Promise<boolean>;
}

/** One committed chunk, as the ledger keeps it. */
export type ChunkEntry = {
  importId: string;
  chunkNo: number;
  firstRow: number;
  lastRow: number;
  rowsDone: number;
  imported: number;
  failed: number;
  /** The chunk's row errors, in row order, each already JSON text (strings are half the memory of objects). */
  errorsJson: string[];
  /** The failed rows' cells (JSON text each: {row, cells}), id_number left empty. */
  failedRowsJson: string[];
  /** The persons the chunk created in the entry's transaction, noted with it (see notePersons). */
  createdPersons?: string[];
};

export type CommittedChunk = { chunkNo: number; firstRow: number; lastRow: number; rowsDone: number };

export interface LedgerPort {
  /** The committed chunks, in any order: chunks commit side by side, so any set of them may be there. */
  committed(importId: string): Promise<CommittedChunk[]>;
  /**
   * Appends the entry; false when the ledger has this chunk already (another run of the import
   * wrote it): the caller then rolls its transaction back.
   */
  append(entry: ChunkEntry): Promise<boolean>;
  /** Notes the persons a chunk created, in the transaction that created them (see purgePersons). */
  notePersons(importId: string, chunkNo: number, clientIds: string[]): Promise<void>;
  /** The failed rows' cells in row order, a page at a time (for the failed rows' file). */
  failedRows(
    importId: string,
    afterRow: number,
    limit: number,
  ): Promise<{ row: number; cells: string[]; messages: Record<string, string[]> }[]>;
}

/** The repositories one transaction sees; `Tx` carries whatever else the chunk writer needs. */
export type ImportTx = {
  imports: ImportRepositoryPort;
  ledger: LedgerPort;
  savepoint: <T>(fn: () => Promise<T>) => Promise<T>;
  identityChecks: Pick<IdentityCheckLog, 'append'>;
  /** The audit trail (an import cancelled is an administrative act). */
  audit: Pick<AuditRepository, 'record'>;
};

/** Files uploaded in the dashboard and waiting for the person's "import this file again?" (deleted after 24 hours). */
export interface PendingUploadsPort {
  note(objectKey: string, companyId: string, at: number): Promise<void>;
  forget(objectKey: string): Promise<void>;
  /** At most `limit` of those uploaded before `before` (ms since the epoch), oldest first. */
  expired(before: number, limit: number): Promise<string[]>;
}

export interface ImportRepos<Tx extends ImportTx> {
  pendingUploads: PendingUploadsPort;
  imports: ImportRepositoryPort;
  ledger: LedgerPort;
  /** Where a dry run commits the identity checks it made, and their audit event (its own transaction is rolled back). */
  identityChecks: Pick<IdentityCheckLog, 'append'>;
  audit: Pick<AuditRepository, 'record'>;
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
}
