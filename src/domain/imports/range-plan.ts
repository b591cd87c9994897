import { normalizeDocumentNumber } from '../claims/claim';
import type { ImportRow } from './csv-file';

/**
 * One file across several workers: the file's chunks cut into ranges of whole chunks, each run as
 * a job of its own by whichever worker is free. A range is chunk numbers, never bytes: its worker
 * reads the file from the start, parsing (not validating) the rows before its range, so ranges
 * start at row boundaries whatever the quoting, and row and chunk numbers are the file's own.
 *
 * Rows resolve identities in file order. A chunk that shares a document with a chunk of an earlier
 * range must not be written before that one has committed: `waitFor` lists, for each such chunk,
 * the chunks of earlier ranges it waits for (the last one before its range with each of its
 * documents: that one waits for the ones before it in turn). Within a range the chunk scheduler
 * orders its own chunks (chunk-scheduler.ts). Job data carries these numbers only, never a document.
 */
export type ImportRange = {
  index: number;
  /** The first chunk of the range. */
  first: number;
  /** The chunk after the range's last; absent for the last range, which runs to the end of the file. */
  end?: number;
  /** [chunk, chunks of earlier ranges it waits for], for the range's chunks that wait for any. */
  waitFor: [number, number[]][];
};

/**
 * The ranges of a file of `rowsTotal` data rows cut in `count` ranges of whole chunks (fewer when
 * there are fewer chunks), with what each chunk waits for. One pass over the rows; what it keeps is
 * the last chunk of each document number seen (numbers only, not types: two documents of different
 * types with one number make a chunk wait when it need not, never the other way round).
 */
export async function planRanges(
  rows: AsyncIterable<ImportRow>,
  opts: { chunkSize: number; rowsTotal: number; count: number },
): Promise<ImportRange[]> {
  const chunks = Math.max(1, Math.ceil(opts.rowsTotal / opts.chunkSize));
  const perRange = Math.ceil(chunks / Math.max(1, Math.min(opts.count, chunks)));
  const count = Math.ceil(chunks / perRange);
  const rangeOf = (chunk: number) => Math.min(Math.floor(chunk / perRange), count - 1);
  const ranges: ImportRange[] = Array.from({ length: count }, (_, index) => ({
    index,
    first: index * perRange,
    ...(index < count - 1 ? { end: (index + 1) * perRange } : {}),
    waitFor: [],
  }));
  const lastChunkOf = new Map<string, number>();
  const waits = new Map<number, Set<number>>();
  let read = 0;
  for await (const row of rows) {
    const chunk = Math.floor(read++ / opts.chunkSize);
    const key = documentNumberOf(row);
    if (key === undefined) continue;
    const before = lastChunkOf.get(key);
    const start = ranges[rangeOf(chunk)]!.first;
    if (before !== undefined && before < start) {
      const set = waits.get(chunk) ?? new Set<number>();
      waits.set(chunk, set.add(before));
    }
    lastChunkOf.set(key, chunk);
  }
  for (const [chunk, on] of [...waits].sort(([a], [b]) => a - b)) {
    ranges[rangeOf(chunk)]!.waitFor.push([chunk, [...on].sort((a, b) => a - b)]);
  }
  return ranges;
}

/** The row's document number as identity compares it; undefined when the row has none to resolve. */
function documentNumberOf(row: ImportRow): string | undefined {
  if (!('body' in row)) return undefined;
  const client = row.body.client as { id_documents?: { number?: unknown }[] } | undefined;
  const number = client?.id_documents?.[0]?.number;
  if (typeof number !== 'string') return undefined;
  const key = normalizeDocumentNumber(number);
  return key === '' ? undefined : key;
}
