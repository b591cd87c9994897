import { describe, expect, it } from 'vitest';

import type { ImportRow } from '../../src/domain/imports/csv-file';
import { planRanges } from '../../src/domain/imports/range-plan';

/** Data rows with these document numbers (undefined: a row with the wrong number of fields). */
async function* rows(numbers: (string | undefined)[]): AsyncGenerator<ImportRow> {
  let row = 2;
  for (const number of numbers) {
    if (number === undefined) yield { row: row++, errors: { row: ['x'] }, cells: [] };
    else yield { row: row++, body: { client: { id_documents: [{ type: 'passport', number }] } }, cells: [] };
  }
}

describe('planRanges: a file cut into ranges of whole chunks, and what each chunk waits for', () => {
  it('cuts the chunks evenly, the last range running to the end of the file', async () => {
    const plan = await planRanges(rows(['a', 'b', 'c', 'd', 'e', 'f', 'g']), { chunkSize: 2, rowsTotal: 7, count: 2 });
    expect(plan).toEqual([
      { index: 0, first: 0, end: 2, waitFor: [] },
      { index: 1, first: 2, waitFor: [] },
    ]);
  });

  it('makes a chunk wait for the last chunk of an earlier range with one of its documents, as normalized, and for no chunk of its own range', async () => {
    // Chunks of 2 rows, 3 ranges of 2 chunks: [0,1] [2,3] [4,5].
    const numbers = ['A1', 'B1', 'c1', 'D1', 'lt-a1', 'E1', 'F1', 'G1', 'a 1', 'D1', 'H1', 'E1'];
    const plan = await planRanges(rows(numbers), { chunkSize: 2, rowsTotal: numbers.length, count: 3 });
    expect(plan.map((r) => [r.first, r.end])).toEqual([
      [0, 2],
      [2, 4],
      [4, undefined],
    ]);
    // "lt-a1" (chunk 2) is A1 of chunk 0; "a 1" (chunk 4) was last seen in chunk 2; D1 (chunk 4) in chunk 1;
    // E1 (chunk 5) in chunk 2; nothing within a range.
    expect(plan[1]!.waitFor).toEqual([[2, [0]]]);
    expect(plan[2]!.waitFor).toEqual([
      [4, [1, 2]],
      [5, [2]],
    ]);
  });

  it('counts rows without a document in the chunks but makes nothing wait for them; never more ranges than chunks', async () => {
    const plan = await planRanges(rows([undefined, 'A', undefined, 'A']), { chunkSize: 2, rowsTotal: 4, count: 10 });
    expect(plan).toEqual([
      { index: 0, first: 0, end: 1, waitFor: [] },
      { index: 1, first: 1, waitFor: [[1, [0]]] },
    ]);
  });
});
