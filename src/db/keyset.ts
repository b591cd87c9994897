/**
 * The SQL side of the lists' keyset paging (the rules are src/domain/paging.ts). Rows are ordered
 * `created_at DESC, id DESC`; a position is the created_at with its microseconds and the id.
 */

/** The position's time of `col`, as a cursor carries it: UTC with microseconds. */
export const positionTs = (col: string): string => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * The keyset condition on `alias`: the row is older than the position ($ts, $id), or any row when
 * both are null. The position is bound as text and cast in SQL: a parameter typed timestamptz goes
 * through the driver's JavaScript Date and loses its microseconds, and a next page would then skip
 * every row of the millisecond its cursor names (rows written by one statement share one time).
 * Written as one row comparison (no OR) so that it stays an index range.
 */
export const olderThan = (alias: string, ts: string, id: string): string =>
  `(${alias}.created_at, ${alias}.id) < (coalesce(${ts}::text::timestamptz, 'infinity'), coalesce(${id}::text::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))`;

/** The bind values of a position for `olderThan`: the time and the id, or two nulls. */
export const positionParams = (after: { ts: string; id: string } | undefined): [string | null, string | null] => [
  after?.ts ?? null,
  after?.id ?? null,
];
