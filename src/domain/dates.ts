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

/** Today's date (YYYY-MM-DD) in the given IANA time zone. */
export function todayIn(timeZone: string, now: Date = new Date()): string {
  // en-CA formats as YYYY-MM-DD.
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
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
