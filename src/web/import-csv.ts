import type { RowError } from '../domain/imports/ports';

export { failedRowsFile, neutraliseCell } from '../domain/imports/failed-rows-file';

/** One line per message: row, column, message, in row order. */
export function errorLines(errors: RowError[]): { row: number; column: string; message: string }[] {
  return errors.flatMap((e) =>
    Object.entries(e.messages).flatMap(([column, list]) => list.map((message) => ({ row: e.row, column, message }))),
  );
}

/** The row errors by column and message, most frequent first, with their count and first row. */
export function errorGroups(lines: { row: number; column: string; message: string }[]) {
  const groups = new Map<string, { column: string; message: string; count: number; firstRow: number }>();
  for (const l of lines) {
    const key = `${l.column}\u0000${l.message}`;
    const g = groups.get(key);
    if (g) g.count++;
    else groups.set(key, { column: l.column, message: l.message, count: 1, firstRow: l.row });
  }
  return [...groups.values()].sort((a, b) => b.count - a.count || a.firstRow - b.firstRow);
}
