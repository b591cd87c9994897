const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True for a real calendar date written YYYY-MM-DD (2025-02-30 is false). */
export function isIsoDate(value: string): boolean {
  const m = ISO_DATE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  return d <= daysInMonth(y, mo);
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** One formatter per time zone: building an Intl.DateTimeFormat costs far more than using one. */
const formatters = new Map<string, Intl.DateTimeFormat>();
/** The last answer per time zone, with the second it was computed for. */
const lastToday = new Map<string, { second: number; date: string }>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    // en-CA formats as YYYY-MM-DD.
    f = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * Today's date (YYYY-MM-DD) in the given IANA time zone. The date changes only at a whole second
 * (time-zone offsets are whole seconds), so the answer is kept per time zone for the second it
 * was computed for.
 */
export function todayIn(timeZone: string, now: Date = new Date()): string {
  const ms = now.getTime();
  const second = Math.floor(ms / 1000);
  const cached = lastToday.get(timeZone);
  if (cached && cached.second === second) return cached.date;
  const date = formatterFor(timeZone).format(ms);
  lastToday.set(timeZone, { second, date });
  return date;
}

/** The same calendar day `years` earlier; 29 February becomes 28 February in a common year. */
export function minusYears(isoDate: string, years: number): string {
  const m = ISO_DATE.exec(isoDate);
  if (!m) throw new RangeError('minusYears expects YYYY-MM-DD');
  const y = Number(m[1]) - years;
  const mo = Number(m[2]);
  const d = Math.min(Number(m[3]), daysInMonth(y, mo));
  return `${String(y).padStart(4, '0')}-${m[2]}-${String(d).padStart(2, '0')}`;
}

/**
 * A time as every answer shows it: RFC 3339 in UTC, to the second, with a numeric offset
 * (`2026-05-01T09:30:00+00:00`), as the database gives `created_at` (src/db/columns.ts isoTime).
 */
export const answerTime = (time: Date | number | string): string => `${new Date(time).toISOString().slice(0, 19)}+00:00`;
