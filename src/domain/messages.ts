import { LIMITS } from './claims/claim-schema';

const KNOWN_LABELS: Record<string, string> = {
  'id_documents.type': 'document type',
  'id_documents.number': 'document number',
  'client.id_documents': 'id documents',
};

const label = (field: string): string => {
  // Array indexes are part of the path, not of the name: "client.id_documents.0" is an id document.
  const last = field.replace(/\.\d+(?=\.|$)/gu, '').split('.');
  const key = last.slice(-2).join('.');
  return KNOWN_LABELS[key] ?? (last.at(-1) ?? field).replace(/_/gu, ' ');
};

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/**
 * A date written YYYY-MM-DD that is not on the calendar (1990-02-30, 2026-13-01): says so, and
 * what is wrong with it, rather than repeating the format it already has.
 */
function notInCalendar(f: string, date: string): string {
  const [y = '', m = '', d = ''] = date.split('-');
  const [year, month] = [Number(y), Number(m)];
  const why =
    year === 0
      ? 'there is no year 0000'
      : month < 1 || month > 12
        ? `there is no month ${m}`
        : Number(d) === 0
          ? 'there is no day 00'
          : `${MONTHS[month - 1]!} ${year} has ${new Date(Date.UTC(year, month, 0)).getUTCDate()} days`;
  return `The ${label(f)} is not a date in the calendar: ${why}.`;
}

/** The message catalogue shared by schema validation, domain validation and the CSV import. */
export const messages = {
  label,
  body: 'The request body must be a JSON object.',
  required: (f: string) => `The ${label(f)} field is required.`,
  string: (f: string) => `The ${label(f)} field must be a string.`,
  maxLength: (f: string, n: number) => `The ${label(f)} field must not be greater than ${n} characters.`,
  date: (f: string) => `The ${label(f)} field must be a valid date in the format YYYY-MM-DD.`,
  notInCalendar,
  oneOf: (f: string, values: readonly string[]) => `The ${label(f)} field must be one of: ${values.join(', ')}.`,
  boolean: (f: string) => `The ${label(f)} field must be true or false.`,
  object: (f: string) => `The ${label(f)} field must be an object.`,
  array: (f: string) => `The ${label(f)} field must be a list.`,
  minItems: (f: string, n: number) => `The ${label(f)} field must have at least ${n} item${n === 1 ? '' : 's'}.`,
  maxItems: (f: string, n: number) => `The ${label(f)} field must not have more than ${n} items.`,
  number: (f: string) => `The ${label(f)} field must be a number.`,
  min: (f: string, n: number) => `The ${label(f)} field must be at least ${n}.`,
  max: (f: string, n: number) => `The ${label(f)} field must not be greater than ${n}.`,
  invalid: (f: string) => `The ${label(f)} field is invalid.`,
  characters: (f: string) => `The ${label(f)} field contains characters that are not allowed (control characters).`,
  dobBeforeToday: 'The date of birth must be a date before today.',
  claimDateFuture: 'The claim date cannot be in the future.',
  claimDateTooOld: (years: number) => `The claim date must be within the last ${years} years.`,
  amountMin: 'The amount must be at least 0.',
  amountDecimals: 'The amount must have at most 2 decimal places.',
  amountMax: `The amount must not be greater than ${LIMITS.amountMax}.`,
  /** `dotted`: the amount as it would be written with a dot ("250,00" → "250.00"). */
  amountDecimalComma: (dotted: string) => `The amount must use a dot as the decimal separator (${dotted}).`,
  currency: 'The currency must be EUR; no other currency is supported.',
  plateCharacters: 'The vehicle registration must consist of letters and digits (spaces, dots and dashes are ignored).',
  documentNumberEmpty: 'The document number must contain more than a country prefix.',
  dobMismatch:
    'The date of birth does not match the client on record for this identity document (data quality error: check the date of birth and the document).',
  documentsOfDifferentClients: 'The identity documents belong to different clients on record (data quality error: nothing was merged).',
} as const;
