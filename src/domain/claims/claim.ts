import type { FromSchema } from 'json-schema-to-ts';

import { addFieldError, type FieldErrors } from '../errors';
import { isIsoDate, minusYears } from '../dates';
import { messages } from '../messages';
import { compileInput, fieldErrorsOf, inSchemaOrder } from '../validation';
import {
  claimInputSchema,
  LIMITS,
  PLATE_CHARACTERS,
  PLATE_SEPARATORS,
  type claimAnswerSchema,
  type Closed,
  type ClaimInputBody,
  type DocumentType,
} from './claim-schema';

export {
  CLAIM_FIELDS,
  CLAIM_SOURCES,
  CLAIM_STATUSES,
  CLAIM_TYPES,
  DOCUMENT_TYPES,
  LIMITS,
  type ClaimSource,
  type ClaimStatus,
  type ClaimType,
  type DocumentType,
} from './claim-schema';
export { messages } from '../messages';

/** A claim as every surface returns it (claim-schema.ts). Document numbers are never part of it. */
export type Claim = FromSchema<Closed<typeof claimAnswerSchema>>;

/** A submission after validation and normalization: what the identity resolution and storage work on. */
export type ClaimInput = {
  client: { firstName: string; lastName: string; dateOfBirth: string; documents: { type: DocumentType; number: string }[] };
} & SubmittedFields;

/**
 * The claim's own fields a submission sets: those of the answer the input also has (claim-schema.ts),
 * named and typed as the answer has them, so that the claim just written is answered field by field.
 */
export type SubmittedFields = Pick<Claim, Exclude<keyof Claim & keyof typeof claimInputSchema.properties, 'client'>>;

/** Removes spaces, dots and dashes and upper-cases: "ab-123.c" and "AB 123C" are the same plate. */
export function normalizePlate(raw: string): string {
  return raw.replace(PLATE_SEPARATOR, '').toUpperCase();
}
const PLATE_SEPARATOR = new RegExp(`[${PLATE_SEPARATORS}]`, 'gu');

/** The plate's character rule: once normalized, letters and digits only (of any script). */
export const isPlateText = (normalized: string): boolean => PLATE_TEXT.test(normalized);
const PLATE_TEXT = new RegExp(`^[${PLATE_CHARACTERS}]+$`, 'u');

/**
 * Trims, removes inner white space, upper-cases and strips one leading country prefix
 * (2 or 3 ASCII letters and a dash: "LT-", "LTU-"). The result may be empty, which callers reject.
 */
export function normalizeDocumentNumber(raw: string): string {
  // The prefix is matched before upper-casing: some letters become ASCII only then ("ß" → "SS").
  return raw
    .replace(/\s+/gu, '')
    .replace(/^[A-Za-z]{2,3}-/u, '')
    .toUpperCase();
}

/** The fields the schema rejected: the domain's rules look only at the others. undefined: none. */
type Rejected = FieldErrors | undefined;
const accepted = (rejected: Rejected, field: string) => rejected === undefined || !(field in rejected);

/**
 * Required text the schema accepted as a string: blank is "not given" (a form or a CSV cell
 * sends blanks, the schema cannot trim). undefined when the field has an error.
 */
function givenText(value: unknown, field: string, errors: FieldErrors, rejected: Rejected): string | undefined {
  if (typeof value !== 'string' || !accepted(rejected, field)) return undefined;
  if (value.trim() !== '') return value;
  addFieldError(errors, field, messages.required(field));
  return undefined;
}

/** A name: PostgreSQL text cannot hold NUL or an unpaired surrogate, and no name has control characters. */
function nameRule(value: unknown, field: string, errors: FieldErrors, rejected: Rejected): string | undefined {
  const name = givenText(value, field, errors, rejected);
  if (name === undefined || !/[\p{Cc}\p{Cs}]/u.test(name)) return name;
  addFieldError(errors, field, messages.characters(field));
  return undefined;
}

/** A calendar date that exists, written YYYY-MM-DD. */
function dateRule(value: unknown, field: string, errors: FieldErrors, rejected: Rejected): string | undefined {
  const date = givenText(value, field, errors, rejected);
  if (date === undefined || isIsoDate(date)) return date;
  addFieldError(errors, field, dateMessage(field, date));
  return undefined;
}

/** Why a text is not a date: written right but not on the calendar (1990-02-30), or not written YYYY-MM-DD. */
export const dateMessage = (field: string, text: string): string =>
  /^\d{4}-\d{2}-\d{2}$/u.test(text) ? messages.notInCalendar(field, text) : messages.date(field);

/**
 * The identity documents' numbers (normalized, more than a country prefix) into `out`, each
 * (type, number) once. `field` is where the list sits: `client.id_documents` or `id_documents`.
 */
export function documentRules(
  raw: unknown,
  field: string,
  out: { type: DocumentType; number: string }[],
  errors: FieldErrors,
  rejected: Rejected,
): void {
  if (!Array.isArray(raw) || !accepted(rejected, field)) return;
  for (let i = 0; i < raw.length; i++) {
    const base = `${field}.${i}`;
    const doc: unknown = raw[i];
    if (!isObject(doc) || !accepted(rejected, base)) continue;
    const rawNumber = givenText(doc.number, `${base}.number`, errors, rejected);
    if (rawNumber === undefined) continue;
    const number = normalizeDocumentNumber(rawNumber);
    if (number === '') {
      addFieldError(errors, `${base}.number`, messages.documentNumberEmpty);
      continue;
    }
    if (typeof doc.type !== 'string' || !accepted(rejected, `${base}.type`)) continue;
    const type = doc.type as DocumentType;
    // The same (type, number) twice in one request counts once.
    if (!out.some((d) => d.type === type && d.number === number)) out.push({ type, number });
  }
}

/** Accepts a JSON number or a decimal string; returns the canonical two-decimal string. */
export function parseAmount(value: unknown, field: string, errors: FieldErrors): string | null {
  if (value === undefined || value === null) return null;
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return (addFieldError(errors, field, messages.number(field)), null);
    if (value < 0) return (addFieldError(errors, field, messages.amountMin), null);
    if (value > Number(LIMITS.amountMax)) return (addFieldError(errors, field, messages.amountMax), null);
    text = String(value);
    if (/e/iu.test(text)) return (addFieldError(errors, field, messages.amountDecimals), null);
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    return (addFieldError(errors, field, messages.number(field)), null);
  }
  const m = /^(-)?(\d+)(?:\.(\d+))?$/u.exec(text);
  if (!m) return (addFieldError(errors, field, amountFormatMessage(text, field)), null);
  const [, minus, int = '0', frac = ''] = m;
  if (minus && (BigInt(int) > 0n || /[1-9]/u.test(frac))) return (addFieldError(errors, field, messages.amountMin), null);
  if (frac.length > 2) return (addFieldError(errors, field, messages.amountDecimals), null);
  if (BigInt(int) > LIMITS.amountMaxIntegerPart) return (addFieldError(errors, field, messages.amountMax), null);
  return `${BigInt(int).toString()}.${frac.padEnd(2, '0')}`;
}

/**
 * Why a text is not an amount. A decimal comma (a European spreadsheet's "250,00" or "1.250,50")
 * is told to be a dot, with the amount so written; "1,250" stays a plain "must be a number" (a
 * comma before three digits may be a thousands separator).
 */
function amountFormatMessage(text: string, field: string): string {
  const comma = /^(-?)(\d+|\d{1,3}(?:\.\d{3})+|\d{1,3}(?: \d{3})+),(\d{1,2})$/u.exec(text);
  if (!comma) return messages.number(field);
  const [, minus = '', int = '', frac = ''] = comma;
  return messages.amountDecimalComma(`${minus}${int.replace(/[. ]/gu, '')}.${frac}`);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const checkClaimShape = compileInput<ClaimInputBody>(claimInputSchema);

/**
 * Validates and normalizes one claim submission, shaped as the JSON body of POST /claims: the
 * schema (claim-schema.ts, the same compiled validator as the API route's), then the rules it
 * cannot say on the fields it accepted, so a CSV row or a form reports all its problems at once.
 * Field paths in the errors are the API's dotted paths (`client.id_documents.0.number`); the CSV
 * import maps them to its column names. `today` is the service's date (APP_TIMEZONE).
 */
export function validateClaimInput(body: unknown, today: string): { value?: ClaimInput; errors: FieldErrors } {
  if (checkClaimShape(body)) {
    const errors: FieldErrors = {};
    const value = claimRules(body, today, errors, undefined);
    return value ? { value, errors } : { errors };
  }
  const rejected = fieldErrorsOf(checkClaimShape.errors ?? []);
  if (!isObject(body)) return { errors: rejected };
  const broken: FieldErrors = {};
  claimRules(body, today, broken, rejected);
  return { errors: inSchemaOrder(claimInputSchema, Object.assign(rejected, broken)) };
}

/** What the schema cannot say: blank text, characters, calendar dates against today, normalization, the amount. */
function claimRules(body: Record<string, unknown>, today: string, errors: FieldErrors, rejected: Rejected): ClaimInput | undefined {
  const client = isObject(body.client) && accepted(rejected, 'client') ? body.client : {};
  const firstName = nameRule(client.first_name, 'client.first_name', errors, rejected);
  const lastName = nameRule(client.last_name, 'client.last_name', errors, rejected);
  const dateOfBirth = dateRule(client.date_of_birth, 'client.date_of_birth', errors, rejected);
  if (dateOfBirth !== undefined && dateOfBirth >= today) addFieldError(errors, 'client.date_of_birth', messages.dobBeforeToday);
  const documents: { type: DocumentType; number: string }[] = [];
  documentRules(client.id_documents, 'client.id_documents', documents, errors, rejected);

  const claimDate = dateRule(body.claim_date, 'claim_date', errors, rejected);
  if (claimDate !== undefined) {
    if (claimDate > today) addFieldError(errors, 'claim_date', messages.claimDateFuture);
    else if (claimDate < minusYears(today, LIMITS.claimDateMaxAgeYears)) {
      addFieldError(errors, 'claim_date', messages.claimDateTooOld(LIMITS.claimDateMaxAgeYears));
    }
  }

  let plate = givenText(body.vehicle_registration, 'vehicle_registration', errors, rejected);
  if (plate !== undefined) {
    plate = normalizePlate(plate);
    if (!isPlateText(plate)) addFieldError(errors, 'vehicle_registration', messages.plateCharacters);
  }
  const amount = accepted(rejected, 'amount') ? parseAmount(body.amount, 'amount', errors) : null;
  const currency = body.currency;
  if (currency !== undefined && currency !== null && currency !== 'EUR' && accepted(rejected, 'currency')) {
    addFieldError(errors, 'currency', messages.currency);
  }
  if (rejected !== undefined || Object.keys(errors).length > 0) return undefined;
  // The schema accepted the body as a whole: the enums and booleans are what it says.
  const valid = body as ClaimInputBody;
  return {
    client: { firstName: firstName!, lastName: lastName!, dateOfBirth: dateOfBirth!, documents },
    claim_date: claimDate!,
    claim_type: valid.claim_type ?? null,
    amount,
    currency: 'EUR',
    is_at_fault: valid.is_at_fault ?? null,
    vehicle_registration: plate!,
    status: valid.status ?? 'filed',
  };
}
