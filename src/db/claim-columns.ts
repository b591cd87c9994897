import type { Claim, DocumentType } from '../domain/claims/claim';
import { CLAIM_FIELDS, CLIENT_FIELDS } from '../domain/claims/claim-schema';
import { isoTime } from './columns';

type ClaimField = Exclude<keyof Claim, 'client'>;
type ClientField = Exclude<keyof Claim['client'], 'id_documents'>;

/**
 * Each field of the claim as it is answered (claim-schema.ts, claimAnswerSchema) as SQL over the
 * claim `c` and its company `co`: a field the declaration gains is a compile error here until its
 * SQL is given. Every reader selects through CLAIM_COLUMNS or claimJson, so this is the one list.
 */
const CLAIM_SQL: Record<ClaimField, string> = {
  id: 'c.id',
  claim_date: 'c.claim_date',
  claim_type: 'c.claim_type',
  amount: 'c.amount::text',
  currency: 'c.currency',
  is_at_fault: 'c.is_at_fault',
  vehicle_registration: 'c.vehicle_registration',
  source: 'c.source',
  status: 'c.status',
  company_name: 'co.name',
  created_at: isoTime('c.created_at'),
};

/** The same for its client, the person `cl`; the document types are documentTypes. */
const CLIENT_SQL: Record<ClientField, string> = {
  id: 'cl.id',
  first_name: 'cl.first_name',
  last_name: 'cl.last_name',
  date_of_birth: 'cl.date_of_birth',
};

/** The distinct document types of the person whose id is `client` (column d.doc_type). */
const documentTypes = (client: string) => `SELECT DISTINCT d.doc_type FROM identity_documents d WHERE d.client_id = ${client}`;

/** The `id_documents` of the person whose id is `client`, as JSON: `[{"type": …}, …]`. */
export const documentTypesJson = (client: string) =>
  `(SELECT coalesce(json_agg(json_build_object('type', t.doc_type) ORDER BY t.doc_type), '[]'::json) FROM (${documentTypes(client)}) t)`;

const claimFields = CLAIM_FIELDS.filter((f): f is ClaimField => f !== 'client');
const clientFields = CLIENT_FIELDS.filter((f): f is ClientField => f !== 'id_documents');

/**
 * The claim's own fields of the answer (not its client) as a select list, `SQL AS field`, but
 * those in `except` (a list that does not join the company leaves out company_name).
 */
export function claimFieldColumns(except: readonly ClaimField[] = []): string {
  return claimFields
    .filter((f) => !except.includes(f))
    .map((f) => `${CLAIM_SQL[f]} AS ${f}`)
    .join(', ');
}

/**
 * The answer's columns as a flat select list (claim `c`, company `co`, person `cl`): the claim's
 * fields by their names, the client's as `client_<field>`, its document types as
 * `client_document_types` (text[]). claimOfRow builds the answer from such a row.
 */
export const CLAIM_COLUMNS = [
  claimFieldColumns(),
  ...clientFields.map((f) => `${CLIENT_SQL[f]} AS client_${f}`),
  `ARRAY(${documentTypes('cl.id')} ORDER BY d.doc_type)::text[] AS client_document_types`,
].join(',\n         ');

/** A row of CLAIM_COLUMNS. */
export type ClaimColumns = Omit<Claim, 'client'> & { [F in ClientField as `client_${F}`]: Claim['client'][F] } & {
  client_document_types: DocumentType[];
};

/** The answer from a row of CLAIM_COLUMNS, its fields in the declaration's order (other columns of the row are left out). */
export function claimOfRow(r: ClaimColumns): Claim {
  const row = r as unknown as Record<string, unknown>;
  const client: Record<string, unknown> = {};
  for (const f of CLIENT_FIELDS) client[f] = f === 'id_documents' ? r.client_document_types.map((type) => ({ type })) : row[`client_${f}`];
  const claim: Record<string, unknown> = {};
  for (const f of CLAIM_FIELDS) claim[f] = f === 'client' ? client : row[f];
  return claim as Claim;
}

/**
 * A claim as JSON in the answer's shape, its fields in the declaration's order: the claim is alias
 * c, its company co, and its client the JSON expression `client`. CLAIM_JSON takes the client
 * from the stored person, alias cl.
 */
export const claimJson = (client: string) =>
  `json_build_object(${CLAIM_FIELDS.map((f) => `'${f}', ${f === 'client' ? client : CLAIM_SQL[f]}`).join(', ')})`;

/** The client of a claim as JSON, from the stored person (alias cl). */
export const CLIENT_JSON = `json_build_object(${CLIENT_FIELDS.map(
  (f) => `'${f}', ${f === 'id_documents' ? documentTypesJson('cl.id') : CLIENT_SQL[f]}`,
).join(', ')})`;

export const CLAIM_JSON = claimJson(CLIENT_JSON);
