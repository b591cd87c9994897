import { QUALITY_DAYS } from '../../domain/quality/quality';

const fraction = { type: 'number', minimum: 0, maximum: 1, description: 'A fraction from 0 to 1 (4 decimals)' } as const;

/** A company's data-quality figures (named `QualityReport` in the OpenAPI document). */
export const qualityReportSchema = {
  $id: 'QualityReport',
  type: 'object',
  properties: {
    period_days: { type: 'integer', examples: [90] },
    claims_stored: { type: 'integer', description: 'Claims registered in the period', examples: [1240] },
    by_source: {
      type: 'object',
      properties: { api: { type: 'integer' }, bulk_import: { type: 'integer' }, assisted: { type: 'integer' } },
      required: ['api', 'bulk_import', 'assisted'],
      examples: [{ api: 310, bulk_import: 900, assisted: 30 }],
    },
    import_rows_rejected: { type: 'integer', description: 'Rows rejected by the imports of the period', examples: [18] },
    import_rejection_rate: {
      ...fraction,
      description: 'rejected ÷ (imported + rejected) import rows of the period; 0 when none',
      examples: [0.0196],
    },
    missing: {
      type: 'object',
      description: 'Shares of the claims of the period without each optional field',
      properties: { claim_type: fraction, amount: fraction, is_at_fault: fraction },
      required: ['claim_type', 'amount', 'is_at_fault'],
      examples: [{ claim_type: 0.012, amount: 0.25, is_at_fault: 0.4 }],
    },
    filing_delay_days: {
      type: 'object',
      description: 'Whole days from claim date to registration: median and 90th percentile (null when no claim)',
      properties: { p50: { type: ['integer', 'null'] }, p90: { type: ['integer', 'null'] } },
      required: ['p50', 'p90'],
      examples: [{ p50: 3, p90: 21 }],
    },
  },
  required: ['period_days', 'claims_stored', 'by_source', 'import_rows_rejected', 'import_rejection_rate', 'missing', 'filing_delay_days'],
} as const;

export const qualityQuery = {
  type: 'object',
  properties: {
    days: {
      type: 'integer',
      minimum: QUALITY_DAYS.min,
      maximum: QUALITY_DAYS.max,
      default: QUALITY_DAYS.default,
      description: 'The period: claims registered in the last this many days',
    },
  },
} as const;

export const qualityEnvelope = { type: 'object', properties: { data: { $ref: 'QualityReport#' } }, required: ['data'] } as const;
