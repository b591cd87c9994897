import { validateClaimInput } from './claims/claim';
import { claimInputSchema, personSearchSchema } from './claims/claim-schema';
import type { FieldErrors } from './errors';
import { validatePersonQuery } from './registry/registry';

/**
 * The inputs whose rules go beyond their schema, each with its full check (the schema's errors
 * and the domain's rules on the fields the schema accepted, in the schema's order of fields).
 */
const FULL_CHECKS = new Map<object, (body: unknown, today: string) => FieldErrors>([
  [claimInputSchema, (body, today) => validateClaimInput(body, today).errors],
  [personSearchSchema, (body) => validatePersonQuery(body).errors],
]);

/**
 * Every error of a body its schema refused, whatever rule each field breaks. A request body is
 * checked against its schema first (the compiled validator, ../validation.ts), and a body that
 * passes goes on to the service, whose rules run then; a body that fails is checked here in full,
 * so that one answer names every field (a missing document and a claim date in the future
 * together), at no cost to the bodies that pass. undefined for a schema without such rules.
 */
export function allInputErrors(schema: unknown, body: unknown, today: string): FieldErrors | undefined {
  const check = typeof schema === 'object' && schema !== null ? FULL_CHECKS.get(schema) : undefined;
  return check?.(body, today);
}
