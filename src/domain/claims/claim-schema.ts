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
      description: 'Spaces, dots and dashes are removed and the value upper-cased.',
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
