import { validationError } from './errors';
import { isUuid } from './ids';

/**
 * Every list of the API and the dashboard is newest first and keyset-paged: a page is `limit` rows
 * after a position, and `meta.next_cursor` names the position of its last row when there are more.
 * This module is the one place that encodes, reads and applies those rules; the SQL side of the
 * comparison is `olderThan` in src/db/keyset.ts.
 */

/** A keyset position in a newest-first list: the row's created_at (microseconds, UTC) and id. */
export type Position = { ts: string; id: string };

/** What a repository is asked for: rows older than `after` (all when undefined), at most `limit`. */
export type PageRequest = { after: Position | undefined; limit: number };

/** A list's answer: `next_cursor` is null on the last page. */
export type Page<T> = { data: T[]; meta: { next_cursor: string | null } };

export function encodeCursor(p: Position): string {
  return Buffer.from(`${p.ts}|${p.id}`, 'utf8').toString('base64url');
}

/** The position a cursor names, or undefined for anything that is not one of ours. */
export function decodeCursor(raw: string): Position | undefined {
  const [ts, id] = Buffer.from(raw, 'base64url').toString('utf8').split('|');
  if (!ts || !id || !isUuid(id) || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u.test(ts)) return undefined;
  return { ts, id };
}

export const invalidCursorMessage = 'The cursor is invalid; use the next_cursor value of a previous page.';

/**
 * The request for one page of `limit` rows after the caller's `cursor`: the repository is asked for
 * one row more, which tells whether there is a next page. A cursor that is not one of ours is a 422
 * naming the field.
 */
export function pageRequest(opts: { cursor?: string | undefined; limit: number }): PageRequest {
  if (!opts.cursor) return { after: undefined, limit: opts.limit + 1 };
  const after = decodeCursor(opts.cursor);
  if (!after) throw validationError({ cursor: [invalidCursorMessage] });
  return { after, limit: opts.limit + 1 };
}

/**
 * The page out of the rows a `pageRequest` read (`limit` + 1 at most): the first `limit` rows as
 * `show` makes them, and the cursor of the last one shown when there was one more.
 */
export function pageOf<Row extends { position: Position }, Shown>(
  rows: readonly Row[],
  limit: number,
  show: (row: Row) => Shown,
): Page<Shown> {
  const slice = rows.slice(0, limit);
  const next = rows.length > limit ? encodeCursor(slice.at(-1)!.position) : null;
  return { data: slice.map(show), meta: { next_cursor: next } };
}
