export const errorBody = {
  type: 'object',
  properties: { message: { type: 'string' } },
  required: ['message'],
} as const;

export const validationErrorBody = {
  type: 'object',
  properties: {
    message: { type: 'string', examples: ['The claim date cannot be in the future.'] },
    errors: {
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'string' } },
      examples: [{ claim_date: ['The claim date cannot be in the future.'] }],
    },
  },
  required: ['message'],
} as const;

/** Error responses every authenticated route can give; routes add 403/404 where they apply. */
export const commonErrors = {
  400: { description: 'The body is not valid JSON', ...errorBody },
  401: { description: 'Missing, malformed, unknown or revoked token', ...errorBody },
  422: { description: 'Validation failed', ...validationErrorBody },
  500: { description: 'Unexpected server error', ...errorBody },
} as const;
