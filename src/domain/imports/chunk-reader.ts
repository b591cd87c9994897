import type { Readable } from 'node:stream';

import { prepareChunk, type DocumentsOf, type PreparedChunk } from './chunk-writer';
import { readImportRows, yieldToEventLoop, type Column, type ImportRow } from './csv-file';
import type { CommittedChunk } from './ports';

/**
 * Rows read between two turns of the event loop: a short slice of parsing, so that the answers to
 * a chunk's statements are not held up by the parser (docs/import-pipeline.md).
 */
const ROWS_PER_TURN = 50;

export type ChunkSource = {
  size: number;
  /** Chunks an earlier run committed, any set of them: skipped. */
  committed: readonly CommittedChunk[];
  today: string;
  documentsOf: DocumentsOf;
};

/** A chunk to write: validated and hashed, with the file's columns (for its failed rows). */
export type ReadChunk = PreparedChunk & { columns: Column[] };

/**
 * The file's chunks still to write, validated and hashed, in file order: chunk n is the data rows
 * n × size to (n + 1) × size − 1, whether or not they are valid, so that a run that starts again
 * cuts the file exactly as the one before and skips what the ledger has.
 */
export async function* readChunks(source: Readable, opts: ChunkSource): AsyncGenerator<ReadChunk> {
  const committed = new Map(opts.committed.map((c) => [c.chunkNo, c]));
  let columns: Column[] = [];
  let rows: ImportRow[] = [];
  let no = 0;
  let read = 0;
  for await (const row of readImportRows(source, { onHeader: (c) => (columns = c) })) {
    // Parsed rows arrive without a turn of the event loop while the parser has input buffered
    // (several 64 KB blocks); the chunks being written, and every other request of this process,
    // would wait that long for their answers.
    if (++read % ROWS_PER_TURN === 0) await yieldToEventLoop();
    rows.push(row);
    if (rows.length < opts.size) continue;
    const chunk = await toWrite(no++, rows, committed.get(no - 1), opts);
    rows = [];
    if (chunk) yield { ...chunk, columns };
  }
  const last = rows.length > 0 ? await toWrite(no, rows, committed.get(no), opts) : undefined;
  if (last) yield { ...last, columns };
}

/** The chunk prepared, or undefined when the ledger has it (checked to be the same rows). */
async function toWrite(no: number, rows: ImportRow[], done: CommittedChunk | undefined, opts: ChunkSource) {
  if (!done) return prepareChunk(no, rows, opts.today, opts.documentsOf);
  if (done.firstRow !== rows[0]!.row || done.lastRow !== rows.at(-1)!.row || done.rowsDone !== rows.length) {
    // The file is cut otherwise than when the chunk was written (IMPORT_CHUNK_SIZE changed meanwhile).
    throw new Error(`The import's chunk ${no} does not match its ledger entry; it cannot be resumed with this chunk size.`);
  }
  return undefined;
}
