import type { ClaimInput } from '../claims/claim';
import type { NewClaimRow } from '../claims/claim-repository';
import { validateClaimInput } from '../claims/claim';
import { withRetries } from '../claims/claim-service';
import type { DocumentRef, IdentityOutcome, KnownDocument } from '../clients/identity';
import type { AuditEventInput } from '../audit/audit';
import type { IdentityCheck } from '../clients/identity-checks';
import { toColumnErrors, yieldToEventLoop, type Column, type ImportRow } from './csv-file';
import type { ChunkEntry, ImportStatus, ImportRepos, ImportTx, RowError } from './ports';

/**
 * The chunk writer: validates a chunk of rows (CPU only, while the previous chunk is being
 * written) and commits it in a transaction of its own together with its ledger entry.
 */

/**
 * Stores the valid rows of a chunk set-based, inside the chunk's transaction, in two steps: look
 * up the stored persons of the chunk's documents (one statement), then resolve identities in row
 * order against them and write (one statement). `documents` are the inputs' documents as stored
 * (hashed), one list per input. The write throws RetryableConflict, having written nothing, when
 * it lost a race for a new person (the caller runs the chunk again: it then finds the person).
 */
/** A chunk's valid rows to write in `tx` for a company's import, their documents as stored, and the stored persons of those documents. */
type ChunkRows<Tx> = [
  tx: Tx,
  companyId: string,
  inputs: ClaimInput[],
  importId: string,
  documents: DocumentRef[][],
  known: KnownDocument[],
];

export type ClaimWriter<Tx> = {
  lookup(tx: Tx, documents: DocumentRef[][]): Promise<KnownDocument[]>;
  /**
   * The same look-up outside any transaction, on a connection of its own, so that it can run
   * while the previous chunk is being written (see `lookAhead`). Absent where statements cannot
   * run side by side (embedded PGlite, one session): the next chunk's documents are then looked
   * up inside the previous chunk's transaction instead, sent with its first statements.
   */
  lookupOutside?: (documents: DocumentRef[][]) => Promise<KnownDocument[]>;
  /**
   * Resolves the identities (one outcome per input, within the company's identity-check budget)
   * and sends the write statements at once: the claims, the identity checks (`checks`, the
   * mismatches told) and the audit event of a budget used up (`events`); `written` settles when they are done, so that the caller can send its own
   * statements behind them.
   */
  write(...rows: ChunkRows<Tx>): Promise<{
    outcomes: IdentityOutcome[];
    checks: IdentityCheck[];
    events: AuditEventInput[];
    created: string[];
    written: Promise<unknown>;
  }>;
  /**
   * Persons first (chunks side by side): resolves the identities as `write` does, counting
   * `pendingChecks` (identity checks of the company's chunks in flight) against the budget, and
   * sends the write of the chunk's new persons and documents only. What is left to write, the
   * claims, identity checks and events, goes to `writePlanned` in the chunk's next transaction.
   */
  writePersons(...rows: [...ChunkRows<Tx>, pendingChecks: number]): Promise<PlannedChunk & { written: Promise<unknown> }>;
  /** The claims, identity checks and events of a chunk whose persons are committed. */
  writePlanned(tx: Tx, planned: PlannedChunk): Promise<unknown>;
};

/**
 * A chunk whose identities are decided and whose new persons are committed: what its claims'
 * transaction writes. `created`: the persons it created (noted for a failed import's clean-up).
 */
export type PlannedChunk = {
  outcomes: IdentityOutcome[];
  claims: NewClaimRow[];
  checks: IdentityCheck[];
  events: AuditEventInput[];
  created: string[];
};
const NOTHING_PLANNED: PlannedChunk = { outcomes: [], claims: [], checks: [], events: [], created: [] };

/** What a chunk's persons' transaction came to: its plan, or the import stopped (as ChunkResult's). */
export type PersonsResult = { kind: 'planned'; planned: PlannedChunk } | { kind: 'stopped'; status: ImportStatus | undefined };

/** A claim's identity documents as stored (the keyed hash): CPU work done before the chunk's transaction. */
export type DocumentsOf = (input: ClaimInput) => DocumentRef[];

/** A validated chunk: the rows to store with their hashed documents, and one slot per row, in row order, to report it. */
export type PreparedChunk = {
  no: number;
  firstRow: number;
  lastRow: number;
  count: number;
  inputs: ClaimInput[];
  documents: DocumentRef[][];
  slots: ({ row: number; index: number; cells: string[] } | (RowError & { cells: string[] }))[];
};

/**
 * Rows validated (and hashed) between two turns of the event loop: other requests, and the answers
 * to the chunk in flight, wait at most that long (about a millisecond; see ROWS_PER_TURN).
 */
const ROWS_PER_SLICE = 50;

/**
 * Row validation is the single-claim validation, called (`validateClaimInput`); the documents are
 * hashed here too, so that the chunk's transaction holds only the database work. The work is cut
 * into slices that let the event loop answer other requests in between.
 */
export async function prepareChunk(no: number, rows: ImportRow[], today: string, documentsOf: DocumentsOf): Promise<PreparedChunk> {
  const inputs: ClaimInput[] = [];
  const documents: DocumentRef[][] = [];
  const slots: PreparedChunk['slots'] = [];
  for (let i = 0; i < rows.length; i++) {
    if (i > 0 && i % ROWS_PER_SLICE === 0) await yieldToEventLoop();
    const r = rows[i]!;
    if ('errors' in r) {
      slots.push({ row: r.row, messages: toColumnErrors(r.errors), cells: r.cells });
      continue;
    }
    const { value, errors } = validateClaimInput(r.body, today);
    if (value) {
      documents.push(documentsOf(value));
      slots.push({ row: r.row, index: inputs.push(value) - 1, cells: r.cells });
    } else slots.push({ row: r.row, messages: toColumnErrors(errors), cells: r.cells });
  }
  return {
    no,
    firstRow: rows[0]?.row ?? 0,
    lastRow: rows.at(-1)?.row ?? 0,
    count: rows.length,
    inputs,
    documents,
    slots,
  };
}

/**
 * A chunk's documents looked up ahead of its transaction, while the chunk before it is being
 * written (its statement then costs the import no time): the stored persons as they were once
 * every chunk before that one had committed. The chunk in flight meanwhile is accounted for when
 * its outcome is known (`settle`): the documents of the rows it wrote, with their persons as they
 * now stand, complete the look-up. A person created by anyone else in between makes the chunk's
 * write lose the race on the documents' unique key: it is then run again with the look-up inside
 * its transaction, as without the look-ahead.
 */
export type LookAhead = { settle(previous: KnownDocument[]): Promise<KnownDocument[] | undefined> };

export function lookAhead(lookupOutside: (documents: DocumentRef[][]) => Promise<KnownDocument[]>, documents: DocumentRef[][]): LookAhead {
  // A failed look-ahead only means the look-up runs inside the transaction, as without it.
  return lookedUp(lookupOutside(documents).catch(() => undefined));
}

/**
 * A look-ahead made inside the previous chunk's transaction, ahead of its write (embedded: see
 * ClaimWriter.lookupOutside): the same as one made outside, with the stored persons as they were
 * once every chunk before the previous one had committed.
 */
export function lookedUp(found: KnownDocument[] | undefined | Promise<KnownDocument[] | undefined>): LookAhead {
  return {
    async settle(previous) {
      const early = await found;
      // The previous chunk's documents go first: planIdentities keeps the first view of a person
      // it is given, and that one is the more recent (a document's owner never changes, and a
      // person's documents only grow). Documents this chunk does not have are ignored by it.
      return early && previous.concat(early);
    },
  };
}

/** The documents of the rows a chunk wrote, each with its person (for the next chunk's look-ahead). */
function knownAfter(documents: DocumentRef[][], outcomes: IdentityOutcome[]): KnownDocument[] {
  const known: KnownDocument[] = [];
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!;
    if (o.ok) for (const d of documents[i]!) known.push({ type: d.type, hash: d.hash, clientId: o.client.id, client: o.client });
  }
  return known;
}

/** What committing a chunk came to. */
export type ChunkResult =
  /**
   * `known`: the documents of the rows written, with their persons (for the next chunk's
   * look-ahead); `next`: the next chunk's documents, when they were looked up in this transaction.
   */
  | { kind: 'written'; known: KnownDocument[]; next?: KnownDocument[] | undefined }
  /**
   * The import is no longer processing (cancelled, failed meanwhile), or a cancel was asked
   * (`cancelled`: the run moves it once every chunk in flight has settled): stop.
   */
  | { kind: 'stopped'; status: ImportStatus | undefined }
  /** Another run of the same import is ahead of this one (the ledger has this chunk already). */
  | { kind: 'superseded' };

/** Thrown inside a chunk's transaction, to roll it back, when the ledger has the chunk already. */
class ChunkSuperseded extends Error {}

export function createChunkWriter<Tx extends ImportTx>(deps: {
  /** Where each chunk's transactions run (a dry run's: savepoints of its one transaction). */
  repos: Pick<ImportRepos<Tx>, 'transaction'>;
  writeClaims: ClaimWriter<Tx>;
  /** Called once a chunk's write and ledger entry are on their way, while this thread waits for them. */
  whileWriting?: (() => void) | undefined;
  /** Awaited in a chunk's transaction, after its lock and before its write (crash tests; none in production). */
  beforeWrite?: ((chunkNo: number) => Promise<void>) | undefined;
}) {
  const { repos, writeClaims, whileWriting, beforeWrite } = deps;

  /**
   * One transaction: lock the import's row, shared with the other chunks in flight (a cancel
   * asked meanwhile wins), store the claims, append the ledger entry (one statement; a chunk
   * another run of the import has written already rolls back). Everything commits together or not at all. The statements go out in pairs, each
   * pair on one round trip: the lock with the documents' look-up, the claims' write with the
   * ledger entry. A chunk that lost a race for a new person is rolled back whole and run again.
   * `ahead`: the documents already looked up (`lookAhead`), used on the first attempt only.
   * `next`: the next chunk's documents, to look up in this transaction ahead of the write (one
   * session: the database runs the look-up while this thread resolves the chunk's identities).
   */
  async function commit(
    run: { id: string; companyId: string },
    chunk: PreparedChunk,
    columns: Column[] | null,
    ahead?: KnownDocument[],
    next?: DocumentRef[][],
  ): Promise<ChunkResult> {
    let attempt = 0;
    const written = withRetries(() =>
      repos.transaction(async (tx): Promise<ChunkResult> => {
        const locked = tx.imports.lockShared(run.id);
        const found = chunk.inputs.length === 0 ? undefined : ahead && attempt++ === 0 ? ahead : writeClaims.lookup(tx, chunk.documents);
        const nextFound = next && writeClaims.lookup(tx, next);
        // Awaited before the transaction commits: a failed statement has aborted it, and a COMMIT
        // would then roll back without a word. (A failed write rolls back anyway.)
        nextFound?.catch(() => {});
        const result = await writeChunk(tx, run, chunk, columns, locked, found);
        const nextKnown = await nextFound;
        return result.kind === 'written' && nextKnown ? { ...result, next: nextKnown } : result;
      }),
    );
    return written.catch((err: unknown) => {
      if (err instanceof ChunkSuperseded) return { kind: 'superseded' } as const;
      throw err;
    });
  }

  /** The chunk's part of `commit`'s transaction, once its statements are on their way. */
  async function writeChunk(
    tx: Tx,
    run: { id: string; companyId: string },
    chunk: PreparedChunk,
    columns: Column[] | null,
    locked: ReturnType<ImportTx['imports']['lockShared']>,
    found: KnownDocument[] | Promise<KnownDocument[]> | undefined,
  ): Promise<ChunkResult> {
    // Both are awaited together: a rejection of either is seen (and the transaction rolls back).
    const [state, known] = await Promise.all([locked, found]);
    if (!state || state.status !== 'processing') return { kind: 'stopped', status: state?.status };
    // Moved to cancelled by the run once every chunk in flight has settled: here the move would
    // wait for their shared locks while they waited for this one's.
    if (state.cancelRequested) return { kind: 'stopped', status: 'cancelled' };
    await beforeWrite?.(chunk.no);
    const { outcomes, written, created } =
      known === undefined
        ? { outcomes: [], written: undefined, created: [] }
        : await writeClaims.write(tx, run.companyId, chunk.inputs, run.id, chunk.documents, known);
    const entry = { ...ledgerEntry(run.id, chunk, outcomes, columns), createdPersons: created };
    const appended = tx.ledger.append(entry);
    // After a failed write the entry fails too (the transaction is aborted): the write's error is the one to see.
    appended.catch(() => {});
    whileWriting?.();
    await written;
    if (!(await appended)) throw new ChunkSuperseded();
    return { kind: 'written', known: knownAfter(chunk.documents, outcomes) };
  }

  /** The import's status as a chunk's lock found it, when that stops the chunk (as in writeChunk). */
  const stoppedBy = (state: { status: ImportStatus; cancelRequested: boolean } | undefined) =>
    !state || state.status !== 'processing'
      ? ({ kind: 'stopped', status: state?.status } as const)
      : state.cancelRequested
        ? ({ kind: 'stopped', status: 'cancelled' } as const)
        : undefined;

  /**
   * Persons first, the first of a chunk's two transactions when chunks are written side by side
   * (docs/import-pipeline.md): lock the import's row (shared), look the chunk's documents up,
   * decide its identities as file order would, and commit its new persons and documents with a
   * note of them. Called for the chunks of a run one at a time, in file order, each once the one
   * before has committed: so each sees every person the file's earlier rows created, and no
   * chunk's claims need wait for another chunk's. A person created meanwhile by anyone else makes
   * the write lose on the documents' unique key: it runs again and finds that person.
   */
  async function commitPersons(
    run: { id: string; companyId: string },
    chunk: PreparedChunk,
    pendingChecks: number,
  ): Promise<PersonsResult> {
    return withRetries(() =>
      repos.transaction(async (tx): Promise<PersonsResult> => {
        const locked = tx.imports.lockShared(run.id);
        const found = chunk.inputs.length === 0 ? undefined : writeClaims.lookup(tx, chunk.documents);
        const [state, known] = await Promise.all([locked, found]);
        const stopped = stoppedBy(state);
        if (stopped) return stopped;
        if (known === undefined) return { kind: 'planned', planned: NOTHING_PLANNED };
        const { written, ...planned } = await writeClaims.writePersons(
          tx,
          run.companyId,
          chunk.inputs,
          run.id,
          chunk.documents,
          known,
          pendingChecks,
        );
        const noted = tx.ledger.notePersons(run.id, chunk.no, planned.created);
        noted.catch(() => {});
        await written;
        await noted;
        return { kind: 'planned', planned };
      }),
    );
  }

  /**
   * The chunk's second transaction: lock the import's row (shared), write the claims, identity
   * checks and events its persons' transaction planned, and append the ledger entry; everything
   * commits together or not at all. Chunks run this side by side, in any order.
   */
  async function commitClaims(
    run: { id: string; companyId: string },
    chunk: PreparedChunk,
    columns: Column[] | null,
    planned: PlannedChunk,
  ): Promise<ChunkResult> {
    const written = withRetries(() =>
      repos.transaction(async (tx): Promise<ChunkResult> => {
        const stopped = stoppedBy(await tx.imports.lockShared(run.id));
        if (stopped) return stopped;
        await beforeWrite?.(chunk.no);
        const claims = writeClaims.writePlanned(tx, planned);
        claims.catch(() => {});
        const appended = tx.ledger.append(ledgerEntry(run.id, chunk, planned.outcomes, columns));
        appended.catch(() => {});
        whileWriting?.();
        await claims;
        if (!(await appended)) throw new ChunkSuperseded();
        return { kind: 'written', known: [] };
      }),
    );
    return written.catch((err: unknown) => {
      if (err instanceof ChunkSuperseded) return { kind: 'superseded' } as const;
      throw err;
    });
  }

  return { commit, commitPersons, commitClaims };
}

/** The ledger entry of a chunk: counts, row errors in row order, and the failed rows' cells (id_number emptied). */
function ledgerEntry(importId: string, chunk: PreparedChunk, outcomes: IdentityOutcome[], columns: Column[] | null): ChunkEntry {
  const idNumberAt = columns?.indexOf('id_number') ?? -1;
  const errorsJson: string[] = [];
  const failedRowsJson: string[] = [];
  let imported = 0;
  for (const slot of chunk.slots) {
    let messages: Record<string, string[]> | undefined;
    if ('messages' in slot) messages = slot.messages;
    else {
      const outcome = outcomes[slot.index]!;
      if (outcome.ok) imported++;
      else messages = toColumnErrors({ [outcome.field]: [outcome.message] });
    }
    if (!messages) continue;
    errorsJson.push(JSON.stringify({ row: slot.row, messages }));
    // Document numbers are never given back: the failed rows' file leaves id_number empty.
    const cells = idNumberAt === -1 ? slot.cells : slot.cells.map((c, i) => (i === idNumberAt ? '' : c));
    failedRowsJson.push(JSON.stringify({ row: slot.row, cells }));
  }
  return {
    importId,
    chunkNo: chunk.no,
    firstRow: chunk.firstRow,
    lastRow: chunk.lastRow,
    rowsDone: chunk.count,
    imported,
    failed: errorsJson.length,
    errorsJson,
    failedRowsJson,
  };
}
