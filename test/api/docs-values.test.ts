import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ALERT_KINDS } from '../../src/domain/alerts/alerts';
import { AUDIT_ACTIONS } from '../../src/domain/audit/audit';
import { CLAIM_SOURCES, CLAIM_STATUSES, CLAIM_TYPES, DOCUMENT_TYPES } from '../../src/domain/claims/claim-schema';
import { COMPANY_ROLES } from '../../src/domain/companies/company-repository';
import { ERROR_CODES } from '../../src/domain/errors';
import { IMPORT_STATUSES } from '../../src/domain/imports/ports';
import { BATCH_STATUSES } from '../../src/domain/lookups/lookup-batch';
import { INDICATOR_NAMES, LOOKUP_KINDS } from '../../src/domain/registry/registry';
import { TOKEN_SCOPES } from '../../src/domain/tokens/scopes';
import { WEBHOOK_EVENTS } from '../../src/domain/webhooks/webhook-service';
import { createTestContext, type TestContext } from '../harness';
import { codeValues, readDoc, tableUnder } from '../markdown';

/**
 * docs/api.md lists every value the server takes for each field of a fixed list, so adding a
 * value (a claim type, a status, a scope, an audit action, ...) without documenting it fails here.
 * The values come from where the server takes them: the domain's constants, and every `enum` of
 * the OpenAPI document the server serves (which its request and answer schemas are).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const api = readDoc('docs/api.md');
const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

/** The values of the row of docs/api.md's Values table whose first cell starts with `label`. */
function valuesRow(label: string): string[] {
  const row = tableUnder(api, '## Values').find(([first]) => first!.startsWith(label));
  if (!row) throw new Error(`docs/api.md's Values table has no row "${label}"`);
  return sorted(codeValues(row[1]!));
}

/** The values in column `column` (0-based) of the table under `heading` in docs/api.md. */
const column = (heading: string, n: number) => sorted(tableUnder(api, heading).flatMap((row) => codeValues(row[n]!)));

/** Every `enum` of a JSON document, as its string values (null dropped). */
function enums(node: unknown, out: string[][] = []): string[][] {
  if (Array.isArray(node)) node.forEach((n) => enums(n, out));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'enum' && Array.isArray(value)) out.push(sorted(value.filter((v): v is string => typeof v === 'string')));
      else enums(value, out);
    }
  }
  return out;
}

describe('docs/api.md lists every value of each fixed list', () => {
  it.each([
    ['`claim_type`', CLAIM_TYPES],
    ['claim `status`', CLAIM_STATUSES],
    ['identity document `type`', DOCUMENT_TYPES],
    ['claim `source`', CLAIM_SOURCES],
    ['import `status`', IMPORT_STATUSES],
    ['batch look-up `status`', BATCH_STATUSES],
    ['look-up `kind`', LOOKUP_KINDS],
    ['alert `kind`', ALERT_KINDS],
    ['indicator `name`', INDICATOR_NAMES],
    ['token scopes', TOKEN_SCOPES],
    ["people's roles", COMPANY_ROLES],
  ] as const)('the row %s names exactly the values the server takes', (label, values) => {
    expect(valuesRow(label)).toEqual(sorted(values));
  });

  it('names every webhook event a delivery can carry (and the test event, ping)', () => {
    expect(valuesRow('webhook event')).toEqual(expect.arrayContaining([...WEBHOOK_EVENTS, 'ping']));
  });

  it('names every audit action in its Audit actions table, and no other', () => {
    expect(column('### Audit actions', 0)).toEqual(sorted(AUDIT_ACTIONS));
  });

  it('names every error code in its Errors table, and no other', () => {
    expect(column('## Errors', 2)).toEqual(sorted(ERROR_CODES));
  });

  it('has, for every enum of the served OpenAPI document, a list with exactly its values', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const found = enums(res.json());
    // The walk reaches the schemas: the claim's status and the error codes are among what it found.
    expect(found).toContainEqual(sorted(CLAIM_STATUSES));
    expect(found).toContainEqual(sorted(ERROR_CODES));

    const documented = [
      ...tableUnder(api, '## Values').map((row) => sorted(codeValues(row[1]!))),
      column('### Audit actions', 0),
      column('## Errors', 2),
    ].map((list) => list.join(' '));
    const undocumented = sorted(found.map((list) => list.join(' '))).filter((list) => !documented.includes(list));
    expect(undocumented, 'an enum of the API whose values no list of docs/api.md names exactly').toEqual([]);
  });
});
