import { IMPORT_STATUSES } from '../../db/import-repository';
import { pageMeta, pageQuery } from './common';

const messagesByColumn = {
  type: 'object',
  description: 'Column name → messages',
  additionalProperties: { type: 'array', items: { type: 'string' } },
  examples: [{ claim_date: ['The claim date cannot be in the future.'] }],
} as const;

const rowError = {
  type: 'object',
  properties: {
    row: { type: 'integer', description: 'The row number a spreadsheet shows (the header is row 1)', examples: [7] },
    messages: messagesByColumn,
  },
  required: ['row', 'messages'],
} as const;

/** The import summary the contract fixes: message, imported, failed, errors (always present). */
export const importSummary = {
  type: 'object',
  properties: {
    message: { type: 'string', examples: ['Import finished: 41 imported, 2 failed.'] },
    imported: { type: 'integer', minimum: 0 },
    failed: { type: 'integer', minimum: 0 },
    errors: { type: 'array', items: rowError },
  },
  required: ['message', 'imported', 'failed', 'errors'],
} as const;

const importProperties = {
  id: { type: 'string', format: 'uuid' },
  status: { type: 'string', enum: IMPORT_STATUSES },
  file_name: { type: 'string', description: 'The uploaded file name, for display' },
  size_bytes: { type: 'integer' },
  progress: {
    type: 'object',
    properties: {
      rows_done: { type: 'integer' },
      rows_total: { type: 'integer', description: 'Counted at upload; exact once finished' },
      rows_per_second: {
        type: ['number', 'null'],
        description:
          'Rows a second since processing began (to one decimal), once a tenth of the rows is done; when completed, the ' +
          'final average. Null before, while queued, and for a failed or cancelled import',
        examples: [10250.5],
      },
      estimated_finish_at: {
        type: ['string', 'null'],
        format: 'date-time',
        description:
          'When the import should finish at its pace so far (`rows_per_second`), while processing and once a tenth of the ' +
          'rows is done; null otherwise (when finished, `finished_at` says when)',
      },
    },
    required: ['rows_done', 'rows_total', 'rows_per_second', 'estimated_finish_at'],
  },
  imported: { type: ['integer', 'null'] },
  failed: { type: ['integer', 'null'] },
  message: { type: ['string', 'null'], description: 'The summary message, or why the import failed' },
  created_at: { type: 'string', format: 'date-time' },
  finished_at: { type: ['string', 'null'], format: 'date-time' },
  history: {
    type: 'array',
    description: 'Every change of status with its time, oldest first; `attempt` numbers each start of processing',
    items: {
      type: 'object',
      properties: {
        status: { type: 'string', enum: IMPORT_STATUSES },
        at: { type: 'string', format: 'date-time' },
        attempt: { type: 'integer' },
      },
      required: ['status', 'at'],
    },
  },
} as const;
const importRequired = Object.keys(importProperties) as (keyof typeof importProperties)[];

export const importListItem = { type: 'object', properties: importProperties, required: importRequired } as const;

export const importDetail = {
  type: 'object',
  properties: {
    ...importProperties,
    summary: { description: 'When completed: the same summary as the import response', anyOf: [importSummary, { type: 'null' }] },
  },
  required: [...importRequired, 'summary'],
} as const;

export const importEnvelope = { type: 'object', properties: { data: importDetail }, required: ['data'] } as const;

export const importPage = {
  type: 'object',
  properties: {
    data: { type: 'array', items: importListItem },
    meta: pageMeta,
  },
  required: ['data', 'meta'],
} as const;

export const importIdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 64, description: 'Import UUID' } },
} as const;

export const listImportsQuery = pageQuery;

/** For the OpenAPI document: the multipart body (validated by the handler, which streams it). */
export const importBodyDoc = {
  type: 'object',
  required: ['file'],
  properties: {
    file: {
      type: 'string',
      format: 'binary',
      description:
        'A .csv or .txt file, UTF-8, at most IMPORT_MAX_BYTES (10 MB); gzip-compressed (.csv.gz) is accepted, recognised by its bytes, the limit counting the decompressed size',
    },
  },
} as const;
