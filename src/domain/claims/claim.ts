import { addFieldError, type FieldErrors } from '../errors';
import { isIsoDate, minusYears } from '../dates';

export const CLAIM_STATUSES = ['filed', 'under_investigation', 'settled', 'closed', 'disputed'] as const;
export type ClaimStatus = (typeof CLAIM_STATUSES)[number];
export const CLAIM_TYPES = ['accident', 'theft', 'other'] as const;
export type ClaimType = (typeof CLAIM_TYPES)[number];
export const DOCUMENT_TYPES = ['passport', 'national_id', 'alien_registration'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];
export const CLAIM_SOURCES = ['api', 'bulk_import', 'assisted'] as const;
export type ClaimSource = (typeof CLAIM_SOURCES)[number];

export const LIMITS = {
  nameMaxLength: 255,
  documentNumberMaxLength: 255,
  plateMaxLength: 20,
  claimDateMaxAgeYears: 3,
  amountMaxIntegerPart: 9_999_999_999n,
  amountMax: '9999999999.99',
  maxDocuments: 10,
} as const;

/** A claim as every surface returns it. Document numbers are never part of it. */
export type Claim = {
  id: string;
  client: { id: string; first_name: string; last_name: string; date_of_birth: string; id_documents: { type: DocumentType }[] };
  claim_date: string;
  claim_type: ClaimType | null;
  amount: string | null;
  currency: 'EUR';
  is_at_fault: boolean | null;
  vehicle_registration: string;
  source: ClaimSource;
  status: ClaimStatus;
  company_name: string;
  created_at: string;
};

/** A submission after validation and normalization: what the identity resolution and storage work on. */
export type ClaimInput = {
  client: { firstName: string; lastName: string; dateOfBirth: string; documents: { type: DocumentType; number: string }[] };
  claimDate: string;
  claimType: ClaimType | null;
  amount: string | null;
  currency: 'EUR';
  isAtFault: boolean | null;
  vehicleRegistration: string;
  status: ClaimStatus;
};

/** Removes spaces, dots and dashes and upper-cases: "ab-123.c" and "AB 123C" are the same plate. */
export function normalizePlate(raw: string): string {
  return raw.replace(/[\s.-]/gu, '').toUpperCase();
}

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

const label = (field: string): string => {
  // Array indexes are part of the path, not of the name: "client.id_documents.0" is an id document.
  const last = field.replace(/\.\d+(?=\.|$)/gu, '').split('.');
  const key = last.slice(-2).join('.');
  const known: Record<string, string> = {
    'id_documents.type': 'document type',
    'id_documents.number': 'document number',
    'client.id_documents': 'id documents',
  };
  return known[key] ?? (last.at(-1) ?? field).replace(/_/gu, ' ');
};

/** The message catalogue shared by schema validation, domain validation and the CSV import. */
export const messages = {
  label,
  required: (f: string) => `The ${label(f)} field is required.`,
  string: (f: string) => `The ${label(f)} field must be a string.`,
  maxLength: (f: string, n: number) => `The ${label(f)} field must not be greater than ${n} characters.`,
  date: (f: string) => `The ${label(f)} field must be a valid date in the format YYYY-MM-DD.`,
  oneOf: (f: string, values: readonly string[]) => `The ${label(f)} field must be one of: ${values.join(', ')}.`,
  boolean: (f: string) => `The ${label(f)} field must be true or false.`,
  object: (f: string) => `The ${label(f)} field must be an object.`,
  array: (f: string) => `The ${label(f)} field must be a list.`,
  minItems: (f: string, n: number) => `The ${label(f)} field must have at least ${n} item${n === 1 ? '' : 's'}.`,
  maxItems: (f: string, n: number) => `The ${label(f)} field must not have more than ${n} items.`,
  number: (f: string) => `The ${label(f)} field must be a number.`,
  min: (f: string, n: number) => `The ${label(f)} field must be at least ${n}.`,
  max: (f: string, n: number) => `The ${label(f)} field must not be greater than ${n}.`,
  characters: (f: string) => `The ${label(f)} field contains characters that are not allowed (control characters).`,
  dobBeforeToday: 'The date of birth must be a date before today.',
  claimDateFuture: 'The claim date cannot be in the future.',
  claimDateTooOld: (years: number) => `The claim date must be within the last ${years} years.`,
  amountMin: 'The amount must be at least 0.',
  amountDecimals: 'The amount must have at most 2 decimal places.',
  amountMax: `The amount must not be greater than ${LIMITS.amountMax}.`,
  currency: 'The currency must be EUR; no other currency is supported.',
  plateCharacters: 'The vehicle registration must consist of letters and digits (spaces, dots and dashes are ignored).',
  documentNumberEmpty: 'The document number must contain more than a country prefix.',
  dobMismatch:
    'The date of birth does not match the client on record for this identity document (data quality error: check the date of birth and the document).',
  documentsOfDifferentClients: 'The identity documents belong to different clients on record (data quality error: nothing was merged).',
} as const;

type Ctx = { today: string; errors: FieldErrors };

function requiredString(value: unknown, field: string, max: number, { errors }: Ctx): string | undefined {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    addFieldError(errors, field, messages.required(field));
    return undefined;
  }
  if (typeof value !== 'string') {
    addFieldError(errors, field, messages.string(field));
    return undefined;
  }
  // Characters as people count them (code points), the same as the JSON schema's maxLength.
  if ([...value].length > max) {
    addFieldError(errors, field, messages.maxLength(field, max));
    return undefined;
  }
  return value;
}

/** A name: PostgreSQL text cannot hold NUL or an unpaired surrogate, and no name has control characters. */
function requiredName(value: unknown, field: string, ctx: Ctx): string | undefined {
  const name = requiredString(value, field, LIMITS.nameMaxLength, ctx);
  if (name !== undefined && /[\p{Cc}\p{Cs}]/u.test(name)) {
    addFieldError(ctx.errors, field, messages.characters(field));
    return undefined;
  }
  return name;
}

function requiredDate(value: unknown, field: string, { errors }: Ctx): string | undefined {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    addFieldError(errors, field, messages.required(field));
    return undefined;
  }
  if (typeof value !== 'string' || !isIsoDate(value)) {
    addFieldError(errors, field, messages.date(field));
    return undefined;
  }
  return value;
}

function optionalEnum<T extends string>(value: unknown, field: string, allowed: readonly T[], { errors }: Ctx): T | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    addFieldError(errors, field, messages.oneOf(field, allowed));
    return null;
  }
  return value as T;
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
  if (!m) return (addFieldError(errors, field, messages.number(field)), null);
  const [, minus, int = '0', frac = ''] = m;
  if (minus && (BigInt(int) > 0n || /[1-9]/u.test(frac))) return (addFieldError(errors, field, messages.amountMin), null);
  if (frac.length > 2) return (addFieldError(errors, field, messages.amountDecimals), null);
  if (BigInt(int) > LIMITS.amountMaxIntegerPart) return (addFieldError(errors, field, messages.amountMax), null);
  return `${BigInt(int).toString()}.${frac.padEnd(2, '0')}`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validates and normalizes one claim submission, shaped as the JSON body of POST /claims.
 * Field paths in the errors are the API's dotted paths (`client.id_documents.0.number`);
 * the CSV import maps them to its column names. `today` is the service's date (APP_TIMEZONE).
 */
export function validateClaimInput(body: unknown, today: string): { value?: ClaimInput; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const ctx: Ctx = { today, errors };
  if (!isObject(body)) return { errors: { body: ['The request body must be a JSON object.'] } };

  const client = body.client;
  let firstName: string | undefined, lastName: string | undefined, dateOfBirth: string | undefined;
  const documents: { type: DocumentType; number: string }[] = [];
  if (client === undefined || client === null) {
    addFieldError(errors, 'client', messages.required('client'));
  } else if (!isObject(client)) {
    addFieldError(errors, 'client', messages.object('client'));
  } else {
    firstName = requiredName(client.first_name, 'client.first_name', ctx);
    lastName = requiredName(client.last_name, 'client.last_name', ctx);
    dateOfBirth = requiredDate(client.date_of_birth, 'client.date_of_birth', ctx);
    if (dateOfBirth !== undefined && dateOfBirth >= today) {
      addFieldError(errors, 'client.date_of_birth', messages.dobBeforeToday);
    }
    collectDocuments(client.id_documents, documents, ctx);
  }

  const claimDate = requiredDate(body.claim_date, 'claim_date', ctx);
  if (claimDate !== undefined) {
    if (claimDate > today) addFieldError(errors, 'claim_date', messages.claimDateFuture);
    else if (claimDate < minusYears(today, LIMITS.claimDateMaxAgeYears)) {
      addFieldError(errors, 'claim_date', messages.claimDateTooOld(LIMITS.claimDateMaxAgeYears));
    }
  }

  let plate = requiredString(body.vehicle_registration, 'vehicle_registration', LIMITS.plateMaxLength, ctx);
  if (plate !== undefined) {
    plate = normalizePlate(plate);
    if (!/^[\p{L}\p{N}]+$/u.test(plate)) addFieldError(errors, 'vehicle_registration', messages.plateCharacters);
  }

  const claimType = optionalEnum(body.claim_type, 'claim_type', CLAIM_TYPES, ctx);
  const amount = parseAmount(body.amount, 'amount', errors);
  if (body.currency !== undefined && body.currency !== null && body.currency !== 'EUR') {
    addFieldError(errors, 'currency', messages.currency);
  }
  let isAtFault: boolean | null = null;
  if (body.is_at_fault !== undefined && body.is_at_fault !== null) {
    if (typeof body.is_at_fault === 'boolean') isAtFault = body.is_at_fault;
    else addFieldError(errors, 'is_at_fault', messages.boolean('is_at_fault'));
  }
  const status = optionalEnum(body.status, 'status', CLAIM_STATUSES, ctx) ?? 'filed';

  if (Object.keys(errors).length > 0) return { errors };
  return {
    errors,
    value: {
      client: { firstName: firstName!, lastName: lastName!, dateOfBirth: dateOfBirth!, documents },
      claimDate: claimDate!,
      claimType,
      amount,
      currency: 'EUR',
      isAtFault,
      vehicleRegistration: plate!,
      status,
    },
  };
}

function collectDocuments(raw: unknown, out: { type: DocumentType; number: string }[], ctx: Ctx): void {
  const field = 'client.id_documents';
  if (raw === undefined || raw === null) return addFieldError(ctx.errors, field, messages.required(field));
  if (!Array.isArray(raw)) return addFieldError(ctx.errors, field, messages.array(field));
  if (raw.length < 1) return addFieldError(ctx.errors, field, messages.minItems(field, 1));
  if (raw.length > LIMITS.maxDocuments) return addFieldError(ctx.errors, field, messages.maxItems(field, LIMITS.maxDocuments));
  const seen = new Set<string>();
  raw.forEach((doc: unknown, i) => {
    const base = `${field}.${i}`;
    if (!isObject(doc)) return addFieldError(ctx.errors, base, messages.object(base));
    const type = doc.type === undefined || doc.type === null ? undefined : doc.type;
    if (type === undefined) addFieldError(ctx.errors, `${base}.type`, messages.required(`${base}.type`));
    else if (typeof type !== 'string' || !(DOCUMENT_TYPES as readonly string[]).includes(type)) {
      addFieldError(ctx.errors, `${base}.type`, messages.oneOf(`${base}.type`, DOCUMENT_TYPES));
    }
    const rawNumber = requiredString(doc.number, `${base}.number`, LIMITS.documentNumberMaxLength, ctx);
    if (rawNumber === undefined) return;
    const number = normalizeDocumentNumber(rawNumber);
    if (number === '') return addFieldError(ctx.errors, `${base}.number`, messages.documentNumberEmpty);
    if (typeof type !== 'string' || !(DOCUMENT_TYPES as readonly string[]).includes(type)) return;
    // The same (type, number) twice in one request counts once.
    const key = `${type}\u0000${number}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ type: type as DocumentType, number });
  });
}
