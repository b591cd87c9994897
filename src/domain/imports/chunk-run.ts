import type { Readable } from 'node:stream';

import {
  lookAhead,
  lookedUp,
  type ChunkResult,
  type ClaimWriter,
  type createChunkWriter,
  type DocumentsOf,
  type LookAhead,
  type PersonsResult,
} from './chunk-writer';
import { readChunks, type ReadChunk } from './chunk-reader';
import { yieldToEventLoop } from './csv-file';
import { writeChunks, type Started } from './chunk-scheduler';
import type { CommittedChunk, ImportRecord, ImportRepos, ImportStatus, ImportTx } from './ports';

/** A job's progress; `waiting_for: 'storage'` while it waits out an outage of the file storage. */
export type ImportProgress = { rows_done: number; rows_total: number; waiting_for?: 'storage' };

/** Another run of this import is ahead of this one (a redelivered job): try again later. */
export class ImportBusy extends Error {
  constructor() {
    super('The import is being processed by another worker');
    this.name = 'ImportBusy';
  }
}

export type ChunkRunDeps<Tx extends ImportTx> = {
  repos: Pick<ImportRepos<Tx>, 'imports' | 'transaction'>;
  writer: ReturnType<typeof createChunkWriter<Tx>>;
  writeClaims: ClaimWriter<Tx>;
  documentsOf: DocumentsOf;
  /** Chunk transactions in flight at a time (IMPORT_WRITERS; 1 where there is one session). */
  writers: number;
  chunkSize: number;
  today: () => string;
  /** Called right after a chunk has committed, before its progress is reported (crash tests). */
  afterChunkCommit?: ((chunkNo: number) => void) | undefined;
};

/** What one chunk's write came to, and the look-up it made for the next chunk (one writer). */
type Written = { no: number; rows: number; result: ChunkResult; ahead?: { for: number; found: LookAhead } };

/** What one pass over a file's chunks is given: the import, its file, what the ledger has, where progress goes. */
export type ChunkPass = {
  run: ImportRecord;
  source: Readable;
  committed: readonly CommittedChunk[];
  onProgress?: ((p: ImportProgress) => Promise<void>) | undefined;
};

/**
 * The write step of an import's run: the file's chunks that the ledger does not have, read,
 * validated and written, up to `writers` at a time (reader, order and writer: chunk-reader.ts,
 * chunk-scheduler.ts, chunk-writer.ts). Each chunk commits with its ledger entry; nothing here
 * moves the import's status.
 */
export function createChunkRun<Tx extends ImportTx>(deps: ChunkRunDeps<Tx>) {
  const { repos, writer, writers } = deps;

  /** Writes the pass's chunks; the status that stopped it early, if one did. */
  async function writeFile({ run, source, committed, onProgress }: ChunkPass): Promise<ImportStatus | undefined> {
    const chunks = readChunks(source, {
      size: deps.chunkSize,
      committed,
      today: deps.today(),
      documentsOf: deps.documentsOf,
    });
    let rowsDone = committed.reduce((sum, c) => sum + c.rowsDone, 0);
    // Side by side, each chunk's persons' transaction follows the one before it (`personsInTurn`).
    let persons: Promise<PersonsResult | undefined> = Promise.resolve(undefined);
    const pending = { checks: 0 };
    for await (const written of writeChunks<ReadChunk, Written>(chunks, writers, async (chunk, next, earlier) => {
      if (writers > 1) {
        // Chained before any await: the persons' transactions go in file order.
        persons = personsInTurn(run, chunk, persons, earlier.length === 0, pending);
        return claimsOf(run, chunk, persons, pending);
      }
      return writeInTurn(run, chunk, next, earlier);
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
   * chunk before it has committed its own (`previous`); then its claims are written whenever
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
    first: boolean,
    pending: { checks: number },
  ): Promise<PersonsResult> {
    return previous.then(async (last) => {
      if (last?.kind === 'stopped') return last;
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
   * finding them. The documents of the next chunk are looked up while this one is written
   * (`lookAhead`): on a connection of their own, or in this chunk's transaction where there is
   * one session.
   */
  async function writeInTurn(
    run: ImportRecord,
    chunk: ReadChunk,
    next: ReadChunk | undefined,
    earlier: readonly Started<ReadChunk, Written>[],
  ): Promise<Written> {
    // Requests that waited for the chunk just written go first: their next statements queue ahead
    // of this chunk's (embedded, PGlite runs one statement at a time).
    await yieldToEventLoop();
    if (earlier.length === 0) await repos.imports.setColumns(run.id, chunk.columns);
    const known = await lookedUpBefore(chunk, earlier.at(-1));
    const nextDocuments = next && next.inputs.length > 0 ? next.documents : undefined;
    const { lookupOutside } = deps.writeClaims;
    const outside = nextDocuments && lookupOutside ? lookAhead(lookupOutside, nextDocuments) : undefined;
    const result = await writer.commit(run, chunk, chunk.columns, known, outside ? undefined : nextDocuments);
    if (result.kind === 'written') deps.afterChunkCommit?.(chunk.no);
    const ahead = outside ?? (result.kind === 'written' && result.next ? lookedUp(result.next) : undefined);
    return { no: chunk.no, rows: chunk.count, result, ...(ahead && next ? { ahead: { for: next.no, found: ahead } } : {}) };
  }

  /** `chunk`'s documents as looked up while `previous` (settled) was written, with the persons it wrote. */
  async function lookedUpBefore(chunk: ReadChunk, previous: Started<ReadChunk, Written> | undefined) {
    const before = await previous?.done;
    if (!before?.ahead || before.ahead.for !== chunk.no || before.result.kind !== 'written') return undefined;
    return before.ahead.found.settle(before.result.known);
  }

  return { writeFile };
}
