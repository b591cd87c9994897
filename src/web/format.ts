/** Helpers every template receives as `it.fmt`. Pure; the time zone is the service's (APP_TIMEZONE). */
export function createFormatters(timeZone: string) {
  const dateTime = new Intl.DateTimeFormat('en-GB', { timeZone, dateStyle: 'medium', timeStyle: 'short' });
  return {
    /** "21 Nov 2026, 10:15" for an RFC 3339 time; "Never" for null. */
    dateTime(iso: string | null | undefined, never = 'Never'): string {
      if (!iso) return never;
      const d = new Date(iso);
      return Number.isNaN(d.getTime()) ? iso : dateTime.format(d);
    },
    /** A claim status (or any snake_case word) for people: "under_investigation" → "Under investigation". */
    status(status: string): string {
      const text = status.replace(/_/gu, ' ');
      return text.charAt(0).toUpperCase() + text.slice(1);
    },
    /** "1,250.00 EUR" from the API's "1250.00"; an em dash for no amount. */
    amount(amount: string | null, currency = 'EUR'): string {
      if (amount === null) return '—';
      const [int = '0', frac = '00'] = amount.split('.');
      return `${int.replace(/\B(?=(\d{3})+(?!\d))/gu, ',')}.${frac} ${currency}`;
    },
    source(source: string): string {
      return ({ api: 'API', bulk_import: 'CSV import', assisted: 'Entered by hand' } as Record<string, string>)[source] ?? source;
    },
    yesNo(value: boolean | null): string {
      return value === null ? 'Not known' : value ? 'Yes' : 'No';
    },
    label(value: string | null): string {
      return value === null ? '—' : (value.charAt(0).toUpperCase() + value.slice(1)).replace(/_/gu, ' ');
    },
    /** "4.2 s", "3 min 05 s", "1 h 02 min" between two RFC 3339 times; an em dash without both. */
    duration(from: string | null | undefined, to: string | null | undefined): string {
      if (!from || !to) return '—';
      const ms = Math.max(0, new Date(to).getTime() - new Date(from).getTime());
      if (Number.isNaN(ms)) return '—';
      if (ms < 60_000) return `${(Math.round(ms / 100) / 10).toLocaleString('en-GB')} s`;
      const s = Math.round(ms / 1000);
      if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
      return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
    },
    number(n: number): string {
      return n.toLocaleString('en-GB');
    },
    timeZone,
  };
}
export type Formatters = ReturnType<typeof createFormatters>;

/** A duration in words, in its largest whole unit: 60 → "1 minute", 7200 → "2 hours", 90 → "90 seconds". */
export function durationWords(seconds: number): string {
  const units: Array<[number, string]> = [
    [86_400, 'day'],
    [3_600, 'hour'],
    [60, 'minute'],
  ];
  const [size, unit] = units.find(([size]) => seconds >= size && seconds % size === 0) ?? [1, 'second'];
  const n = seconds / size;
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** A list in words: "a", "a and b", "a, b and c". */
export const listWords = (items: readonly string[]) =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;

/** Dotted field path → the id of its input, e.g. client.id_documents.0.number → f-client-id_documents-0-number. */
export const fieldId = (path: string) => `f-${path.replace(/\./gu, '-')}`;

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** For the few template helpers that build markup in code; plain `<%= %>` output is escaped by Eta. */
export const escapeHtml = (value: unknown) => String(value).replace(/[&<>"']/gu, (c) => HTML_ESCAPES[c]!);
