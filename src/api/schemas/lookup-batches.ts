import { BATCH_STATUSES } from '../../domain/lookups/lookup-batch';

/** A batch plate look-up (named `LookupBatch` in the OpenAPI document). */
export const lookupBatchSchema = {
  $id: 'LookupBatch',
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: BATCH_STATUSES, examples: ['completed'] },
    file_name: { type: 'string', examples: ['portfolio.csv'] },
    purpose: { type: ['string', 'null'], examples: ['Renewal check, November portfolio'] },
    plates: { type: 'integer', description: 'Data rows in the file', examples: [1200] },
    rows_done: { type: 'integer', description: 'Rows looked up so far (progress)', examples: [1200] },
    distinct_plates: { type: 'integer', description: 'Distinct normalized plates looked up: one results line each', examples: [1187] },
    invalid_rows: { type: 'integer', description: 'Rows whose plate is empty or not letters and digits (not looked up)', examples: [3] },
    message: { type: ['string', 'null'], description: 'Why a failed batch failed' },
    created_at: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:30+00:00'] },
    finished_at: { type: ['string', 'null'], format: 'date-time', examples: ['2026-11-21T10:15:32+00:00'] },
  },
  required: [
    'id',
    'status',
    'file_name',
    'purpose',
    'plates',
    'rows_done',
    'distinct_plates',
    'invalid_rows',
    'message',
    'created_at',
    'finished_at',
  ],
} as const;

export const lookupBatchEnvelope = { type: 'object', properties: { data: { $ref: 'LookupBatch#' } }, required: ['data'] } as const;

export const lookupBatchParams = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const;

/** Documentation of the multipart body (the route reads it as a stream, unvalidated by ajv). */
export const lookupBatchBodyDoc = {
  type: 'object',
  properties: {
    purpose: {
      type: 'string',
      maxLength: 200,
      description: 'Why you look (at most 200 characters); sent before the file part',
      examples: ['Renewal check'],
    },
    file: {
      type: 'string',
      format: 'binary',
      description:
        'A CSV (.csv or .txt, UTF-8) with a `vehicle_registration` column (other columns ignored), at most 100,000 data rows; gzip-compressed (.csv.gz) is accepted',
      examples: ['vehicle_registration\nAB123C\nLRK-441\n'],
    },
  },
  required: ['file'],
} as const;
