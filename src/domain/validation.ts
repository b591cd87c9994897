import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

import type { FieldErrors } from './errors';
import { messages } from './messages';

/**
 * The one validator of the inputs: every input schema is compiled once, here, and the same
 * compiled function serves the API route (src/api/app.ts hands Fastify these for request bodies)
 * and the domain (the CSV rows, the dashboard's forms, the person search). Strict: no type
 * coercion ("12" is not a boolean), no defaults filled in; every problem is reported.
 */
// ajv-formats is CommonJS: under ESM its plugin is the default export's `default`, typed as any.
// eslint-disable-next-line @typescript-eslint/no-unsafe-call
const ajv: Ajv = addFormats.default(new Ajv({ allErrors: true, coerceTypes: false, useDefaults: false, strict: false })) as Ajv;
const compiled = new WeakMap<object, ValidateFunction>();

/** The compiled validator of a schema object, compiled on first use and kept for the process's life. */
export function compileInput<T = unknown>(schema: object): ValidateFunction<T> {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  return validate as ValidateFunction<T>;
}

/** An input checked against its schema alone (no rules beyond it): the typed value, or the contract's field errors. */
export function validateInput<T>(
  schema: object,
  input: unknown,
): { value: T; errors?: undefined } | { value?: undefined; errors: FieldErrors } {
  const validate = compileInput<T>(schema);
  return validate(input) ? { value: input } : { errors: fieldErrorsOf(validate.errors ?? []) };
}

export type SchemaIssue = Pick<ErrorObject, 'keyword' | 'instancePath' | 'params'>;

/**
 * The one table from validator issues to the contract's messages, for every surface: dotted
 * field paths with indexes (`client.id_documents.0.number`), messages from the catalogue.
 */
export function fieldErrorsOf(issues: readonly SchemaIssue[]): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of issues) {
    let field = issue.instancePath.slice(1).replaceAll('/', '.');
    const params = issue.params as Record<string, unknown>;
    let message: string;
    switch (issue.keyword) {
      case 'required':
        field = field === '' ? String(params.missingProperty) : `${field}.${String(params.missingProperty)}`;
        message = messages.required(field);
        break;
      case 'maxLength':
        message = messages.maxLength(field, Number(params.limit));
        break;
      case 'minLength':
        message = messages.required(field);
        break;
      case 'enum':
        message = messages.oneOf(field, (params.allowedValues as unknown[]).filter((v) => v !== null).map(String));
        break;
      case 'minItems':
        message = messages.minItems(field, Number(params.limit));
        break;
      case 'maxItems':
        message = messages.maxItems(field, Number(params.limit));
        break;
      case 'minimum':
        message = messages.min(field, Number(params.limit));
        break;
      case 'maximum':
        message = messages.max(field, Number(params.limit));
        break;
      case 'type':
        message = typeMessage(field, String(params.type));
        break;
      default:
        message = messages.invalid(field || 'body');
    }
    const list = (errors[field || 'body'] ??= []);
    if (!list.includes(message)) list.push(message);
  }
  return errors;
}

function typeMessage(field: string, type: string): string {
  if (field === '') return messages.body;
  if (type.startsWith('boolean')) return messages.boolean(field);
  if (type.startsWith('number') || type.startsWith('integer')) return messages.number(field);
  if (type.startsWith('array')) return messages.array(field);
  if (type.startsWith('object')) return messages.object(field);
  return messages.string(field);
}

type SchemaNode = { properties?: Record<string, SchemaNode>; items?: SchemaNode };

/** A field path's position in the schema: each name's index among its siblings, each array index as is. */
function rankOf(schema: object, path: string): number[] {
  const rank: number[] = [];
  let node: SchemaNode | undefined = schema;
  for (const part of path.split('.')) {
    if (/^\d+$/u.test(part)) {
      rank.push(Number(part));
      node = node?.items;
      continue;
    }
    const names = node?.properties ? Object.keys(node.properties) : [];
    const i = names.indexOf(part);
    rank.push(i === -1 ? names.length : i);
    node = node?.properties?.[part];
  }
  return rank;
}

function compareRanks(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/**
 * The errors in the order of the schema's fields (client first, then claim_date, ...): the
 * validator reports missing fields before wrong ones, the domain's rules come after both, and
 * the first message is the one a 422 shows.
 */
export function inSchemaOrder(schema: object, errors: FieldErrors): FieldErrors {
  const fields = Object.keys(errors);
  if (fields.length < 2) return errors;
  const ranks = ranksOf(schema);
  const rank = (field: string) => {
    let r = ranks.get(field);
    if (r) return r;
    r = rankOf(schema, field);
    // Bounded: an input with thousands of array items must not grow the cache.
    if (ranks.size < 1000) ranks.set(field, r);
    return r;
  };
  fields.sort((a, b) => compareRanks(rank(a), rank(b)));
  const out: FieldErrors = {};
  for (const f of fields) out[f] = errors[f]!;
  return out;
}

/** Each schema's field paths and their positions: the paths a schema's errors can name are few, and repeat row after row. */
const rankCache = new WeakMap<object, Map<string, number[]>>();
function ranksOf(schema: object): Map<string, number[]> {
  let ranks = rankCache.get(schema);
  if (!ranks) rankCache.set(schema, (ranks = new Map<string, number[]>()));
  return ranks;
}
