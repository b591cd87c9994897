import type { FromSchema } from 'json-schema-to-ts';

/**
 * The one declaration of what a claim submission looks like: types, required fields, enums,
 * lengths, item counts. The API route, the CSV rows, the dashboard form and the person search
 * all go through these schemas, compiled once (../validation.ts); what a schema cannot say
 * (dates against today, blank text, normalization, amount precision, identity) is in claim.ts.
 * Change a limit here, and every surface and its message follow.
 */

export const CLAIM_STATUSES = ['filed', 'under_investigation', 'settled', 'closed', 'disputed'] as const;
export type ClaimStatus = (typeof CLAIM_STATUSES)[number];
export const CLAIM_TYPES = ['accident', 'theft', 'other'] as const;
export type ClaimType = (typeof CLAIM_TYPES)[number];
export const DOCUMENT_TYPES = ['passport', 'national_id', 'alien_registration'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];
export const CLAIM_SOURCES = ['api', 'bulk_import', 'assisted'] as const;
export type ClaimSource = (typeof CLAIM_SOURCES)[number];

/** A calendar date; that it exists, and how it stands against today, is checked in the domain (claim.ts). */
const isoDate = { type: 'string', examples: ['2026-03-14'] } as const;

/** A first or last name. */
const personName = { type: 'string', maxLength: 255 } as const;

/** The identity documents of a person, as a submission and a person search take them. */
export const idDocumentsSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 10,
  items: {
    type: 'object',
    required: ['type', 'number'],
    properties: {
      type: { type: 'string', enum: DOCUMENT_TYPES },
      number: {
        type: 'string',
        maxLength: 255,
        description: 'A country prefix such as "LT-" is stripped before matching. Never returned, never logged.',
        examples: ['LT-39001010000'],
      },
    },
  },
} as const;

/** The body of POST /claims, the row of a CSV import, the dashboard's claim form. Unknown fields are ignored. */
export const claimInputSchema = {
  type: 'object',
  required: ['client', 'claim_date', 'vehicle_registration'],
  properties: {
    client: {
      type: 'object',
      required: ['first_name', 'last_name', 'date_of_birth', 'id_documents'],
      properties: {
        first_name: { ...personName, examples: ['Ona'] },
        last_name: { ...personName, examples: ['Petraitė'] },
        date_of_birth: { ...isoDate, description: 'Before today.', examples: ['1985-06-02'] },
        id_documents: idDocumentsSchema,
      },
    },
    claim_date: { ...isoDate, description: 'Not in the future; within the last 3 years.' },
    vehicle_registration: {
      type: 'string',
      maxLength: 20,
      description: 'Spaces, dots and dashes are removed and the value upper-cased; then letters and digits (of any script) only.',
      examples: ['ab-123 c'],
    },
    claim_type: { type: ['string', 'null'], enum: [...CLAIM_TYPES, null] },
    amount: {
      type: ['number', 'string', 'null'],
      description: '>= 0, at most 2 decimals, at most 9999999999.99; returned as a string.',
      examples: [1250],
    },
    currency: { type: ['string', 'null'], description: 'Only EUR; defaults to EUR.', examples: ['EUR'] },
    is_at_fault: { type: ['boolean', 'null'] },
    status: { type: ['string', 'null'], enum: [...CLAIM_STATUSES, null], description: 'Defaults to filed (also when null).' },
  },
} as const;
export type ClaimInputBody = FromSchema<typeof claimInputSchema>;

/** Why a caller looks at other companies' claims, kept in the look-up log. */
export const purposeSchema = {
  type: ['string', 'null'],
  maxLength: 200,
  description: 'Why you look (at most 200 characters), kept in the look-up log; optional.',
  examples: ['New claim 2026-1183: checking the vehicle history'],
} as const;

/** The body of a search by plate (API); the dashboard's search box goes through it too. */
export const plateSearchSchema = {
  type: 'object',
  required: ['vehicle_registration'],
  properties: {
    vehicle_registration: { ...claimInputSchema.properties.vehicle_registration, examples: ['AB-123.C'] },
    purpose: purposeSchema,
  },
} as const;
export type PlateSearchBody = FromSchema<typeof plateSearchSchema>;

/** The body of a search by person: date of birth and documents as in a submission, and an optional purpose. */
export const personSearchSchema = {
  type: 'object',
  required: ['date_of_birth', 'id_documents'],
  properties: {
    date_of_birth: { ...isoDate, examples: ['1985-06-02'] },
    id_documents: idDocumentsSchema,
    purpose: { ...purposeSchema, examples: ['New claim 2026-1183: checking the claimant'] },
  },
} as const;
export type PersonSearchBody = FromSchema<typeof personSearchSchema>;

/** A change of status (API); the dashboard's status form goes through it too. */
export const statusChangeSchema = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string', enum: CLAIM_STATUSES, examples: ['under_investigation'] } },
} as const;
export type StatusChangeBody = FromSchema<typeof statusChangeSchema>;

/** The limits as numbers, read from the schemas above (for messages and the CSV's column checks). */
export const LIMITS = {
  nameMaxLength: claimInputSchema.properties.client.properties.first_name.maxLength,
  documentNumberMaxLength: idDocumentsSchema.items.properties.number.maxLength,
  plateMaxLength: claimInputSchema.properties.vehicle_registration.maxLength,
  maxDocuments: idDocumentsSchema.maxItems,
  purposeMaxLength: purposeSchema.maxLength,
  claimDateMaxAgeYears: 3,
  amountMaxIntegerPart: 9_999_999_999n,
  amountMax: '9999999999.99',
} as const;

/**
 * An object of the answer: every property required (null where a value may be missing), in the
 * order given, which is the order of the answer's fields on every surface.
 */
function answerObject<const P extends Record<string, object>>(properties: P) {
  return { type: 'object', properties, required: Object.keys(properties) as (keyof P & string)[] } as const;
}

/**
 * The type of an answer schema, closed: the published schema leaves objects open (a field added
 * later breaks no client), while the type knows exactly the fields declared.
 */
export type Closed<S> = S extends { type: 'object'; properties: infer P }
  ? {
      [K in keyof S | 'additionalProperties']: K extends 'additionalProperties'
        ? false
        : K extends 'properties'
          ? { [F in keyof P]: Closed<P[F]> }
          : S[K & keyof S];
    }
  : S extends { type: 'array'; items: infer I }
    ? { [K in keyof S]: K extends 'items' ? Closed<I> : S[K] }
    : S;

/** The client of a claim as it is answered: identity document types only, never numbers. */
export const clientAnswerSchema = answerObject({
  id: { type: 'string', format: 'uuid', examples: ['0193a1b2-0000-7000-8000-000000000003'] },
  first_name: { type: 'string', examples: ['Ona'] },
  last_name: { type: 'string', examples: ['Petraitė'] },
  date_of_birth: { type: 'string', examples: ['1985-06-02'] },
  id_documents: { type: 'array', items: answerObject({ type: { type: 'string', enum: DOCUMENT_TYPES, examples: ['passport'] } }) },
});

/**
 * The one declaration of a claim as every surface answers it, in its fields' order: the type
 * `Claim` (claim.ts), the API's `Claim` and `Client` schemas (src/api/schemas/claims.ts), the
 * columns every repository selects (src/db/claim-columns.ts: each field's SQL, which the compiler
 * asks for), the claim just written (claim-service.ts) and the dashboard's CSV export (the
 * import's columns that are answer fields) follow it. Adding a field here and its SQL there is
 * the whole change for a field read from storage; test/unit/claim-answer.test.ts checks that every
 * derivation agrees.
 */
export const claimAnswerSchema = answerObject({
  id: { type: 'string', format: 'uuid', examples: ['0193a1b2-0000-7000-8000-000000000002'] },
  client: clientAnswerSchema,
  claim_date: { type: 'string', examples: ['2026-03-14'] },
  claim_type: { type: ['string', 'null'], enum: [...CLAIM_TYPES, null], examples: ['accident'] },
  amount: { type: ['string', 'null'], examples: ['1250.00'] },
  currency: { type: 'string', enum: ['EUR'], examples: ['EUR'] },
  is_at_fault: { type: ['boolean', 'null'], examples: [false] },
  vehicle_registration: { type: 'string', examples: ['AB123C'] },
  source: { type: 'string', enum: CLAIM_SOURCES, examples: ['api'] },
  status: { type: 'string', enum: CLAIM_STATUSES, examples: ['filed'] },
  company_name: { type: 'string', examples: ['Baltic Mutual'] },
  created_at: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:30+00:00'] },
});
/** The answer's fields in their order. */
export const CLAIM_FIELDS = claimAnswerSchema.required;
export const CLIENT_FIELDS = clientAnswerSchema.required;

/** A value as its schema's examples make it: each field's first example (every field of the answer has one). */
function exampleOf(schema: object): unknown {
  if ('properties' in schema) {
    return Object.fromEntries(Object.entries(schema.properties as Record<string, object>).map(([k, v]) => [k, exampleOf(v)]));
  }
  if ('items' in schema) return [exampleOf(schema.items as object)];
  return (schema as { examples: readonly unknown[] }).examples[0];
}
/** A claim as answered, made of the declaration's examples: for the OpenAPI document's examples of answers holding one. */
export const CLAIM_EXAMPLE = exampleOf(claimAnswerSchema) as FromSchema<Closed<typeof claimAnswerSchema>>;

/**
 * The plate's characters, as the domain normalizes and checks it (claim.ts normalizePlate,
 * isPlateText): the separators (spaces, dots, dashes) are removed, then letters and digits of any
 * script remain. Character-class bodies, for RegExp and for the published pattern.
 */
export const PLATE_SEPARATORS = '\\s.\\-';
export const PLATE_CHARACTERS = '\\p{L}\\p{N}';

/**
 * What the domain's rules (claim.ts validateClaimInput, registry.ts validatePersonQuery, the plate
 * search) refuse beyond the input schemas above, as JSON Schema keywords, by field name. They are
 * not compiled into the server's validator (its messages are the domain's, naming the field);
 * the OpenAPI document publishes each input schema with them (publishedInput), so that a
 * generated client refuses what the server refuses. Patterns are ECMA-262 with the `u` flag.
 * test/api/openapi-request-rules.test.ts sends each refused value to the server and to the
 * published schema.
 */
const PUBLISHED_RULES: Record<string, Record<string, unknown>> = {
  // Not blank, no control characters (PostgreSQL text cannot hold NUL or a lone surrogate).
  first_name: { pattern: '^(?=\\s*\\S)[^\\p{Cc}\\p{Cs}]*$' },
  last_name: { pattern: '^(?=\\s*\\S)[^\\p{Cc}\\p{Cs}]*$' },
  // A calendar date that exists, from year 0001.
  date_of_birth: { format: 'date', pattern: '^(?!0000)\\d{4}-\\d{2}-\\d{2}$' },
  claim_date: { format: 'date', pattern: '^(?!0000)\\d{4}-\\d{2}-\\d{2}$' },
  // Not blank, and more than a country prefix once white space is removed.
  number: { pattern: '^(?!\\s*$)(?!(?:\\s*[A-Za-z]){2,3}\\s*-\\s*$)' },
  vehicle_registration: {
    pattern: `^[${PLATE_SEPARATORS}]*[${PLATE_CHARACTERS}][${PLATE_CHARACTERS}${PLATE_SEPARATORS}]*$`,
  },
  // A number within the bounds, or a decimal string of at most 2 decimals within them ("-0" is 0).
  // Not `multipleOf: 0.01`: in binary floating point 0.07 is no multiple of 0.01, and validators
  // would refuse amounts the server takes; the description says it.
  amount: {
    minimum: 0,
    maximum: Number(LIMITS.amountMax),
    pattern: '^\\s*(?:-0+(?:\\.0{1,2})?|0*\\d{1,10}(?:\\.\\d{1,2})?)\\s*$',
  },
  currency: { enum: ['EUR', null] },
  // Tab, line feed and carriage return are the only control characters it may hold.
  purpose: { pattern: '^(?:[\\t\\n\\r]|[^\\p{Cc}\\p{Cs}])*$' },
};

/** A copy of an input schema with PUBLISHED_RULES merged into each property of their name, at any depth. */
function withRules(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withRules);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] =
      key === 'properties'
        ? Object.fromEntries(
            Object.entries(value as Record<string, unknown>).map(([name, property]) => [
              name,
              { ...(withRules(property) as object), ...PUBLISHED_RULES[name] },
            ]),
          )
        : withRules(value);
  }
  return out;
}

/** The input schemas as the OpenAPI document publishes them: each with the rules the server enforces beyond it. */
const PUBLISHED = new Map<object, unknown>(
  [claimInputSchema, plateSearchSchema, personSearchSchema, statusChangeSchema].map((s) => [s, withRules(s)]),
);

/** The published form of an input schema (above); any other schema as it is. */
export const publishedInput = (schema: unknown): unknown =>
  (schema !== null && typeof schema === 'object' && PUBLISHED.get(schema)) || schema;
