/**
 * A batch of rows sent as one text parameter per column, zipped back into rows in SQL with
 * `ROWS FROM (unnest($1::text::uuid[]), json_array_elements_text($2::text::json), …)`: cheaper
 * for the server and for the database than the driver's escaping of each array element (visible
 * in an import's CPU profile) or a JSON object per row.
 */

/**
 * An array literal (`{a,b,NULL}`) of values that never need quoting: ids, ISO dates, numbers,
 * hex hashes and fixed codes, as validated before they get here. A value that would need quoting
 * is refused rather than sent wrong.
 */
export function arrayLiteral<T>(items: readonly T[], pick: (item: T) => string | null): string {
  let out = '{';
  for (let i = 0; i < items.length; i++) {
    const v = pick(items[i]!);
    if (v !== null && !SAFE_ELEMENT.test(v)) throw new Error('a value that needs quoting in an array literal');
    out += (i === 0 ? '' : ',') + (v ?? 'NULL');
  }
  return out + '}';
}
const SAFE_ELEMENT = /^(?![Nn][Uu][Ll][Ll]$)[0-9A-Za-z_.-]+$/;

/** Free texts (names, plates, purposes) as a JSON array, for `json_array_elements_text`. */
export const jsonArray = <T>(items: readonly T[], pick: (item: T) => string | null): string => JSON.stringify(items.map(pick));

/** A time as the API shows it: UTC, to the second, with its offset (`2026-05-01T09:30:00+00:00`). */
export const isoTime = (col: string): string => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;
