import { isUuid } from './ids';

/** A keyset position in a newest-first list: the row's created_at (microseconds, UTC) and id. */
export type Cursor = { ts: string; id: string };

export function encodeCursor(c: Cursor): string {
  return Buffer.from(`${c.ts}|${c.id}`, 'utf8').toString('base64url');
}

/** The position a cursor names, or undefined for anything that is not one of ours. */
export function decodeCursor(raw: string): Cursor | undefined {
  const [ts, id] = Buffer.from(raw, 'base64url').toString('utf8').split('|');
  if (!ts || !id || !isUuid(id) || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u.test(ts)) return undefined;
  return { ts, id };
}

export const invalidCursorMessage = 'The cursor is invalid; use the next_cursor value of a previous page.';
