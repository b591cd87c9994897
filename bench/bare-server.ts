/**
 * The yardstick of `npm run bench:api`: a bare Fastify server running the same SQL as the service
 * on the service's own schema, and nothing else: no token check, no validation beyond a JSON
 * schema, no identity rules, plain JSON.stringify responses, no logging. The ratio of the service
 * to this server is the price of what the service does on top of the database work.
 *
 *   POST /search  {"vehicle_registration": "AB123C"}   the service's plate search statement
 *   POST /submit  the service's submit body              look the document up, create the client and
 *                                                         its documents if new, insert the claim, read
 *                                                         it back: one round trip per statement, in a
 *                                                         transaction, as a plain route would
 *
 * Env: DATABASE_URL, PORT, DOCUMENT_HASH_KEY (the service's key, so known persons are found),
 * COMPANY_ID (whose claims the submissions are), SEARCH_HISTORY_YEARS (3), DB_POOL_SIZE (10).
 * Started by bench/api.ts; listens on 127.0.0.1 only.
 */
import { createHmac, randomUUID } from 'node:crypto';

import Fastify from 'fastify';
import postgres from 'postgres';

import { normalizeDocumentNumber, normalizePlate } from '../src/domain/claims/claim';

const env = (name: string, fallback?: string): string => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) throw new Error(`${name} is required`);
  return v;
};
const DATE_OID = 1082;
const sql = postgres(env('DATABASE_URL'), {
  max: Number(env('DB_POOL_SIZE', '10')),
  onnotice: () => {},
  connection: { TimeZone: 'UTC' },
  types: { date: { to: DATE_OID, from: [DATE_OID], serialize: (v: string) => v, parse: (v: string) => v } },
});
const key = env('DOCUMENT_HASH_KEY');
const companyId = env('COMPANY_ID');
const years = Number(env('SEARCH_HISTORY_YEARS', '3'));
// The service's own normalization, so that a person it stored is found here and the other way round.
const hashDocument = (n: string) => createHmac('sha256', key).update(normalizeDocumentNumber(n), 'utf8').digest('hex');
const plateOf = normalizePlate;

const CLAIM_SELECT = `
  SELECT c.id, c.claim_date, c.claim_type, c.amount::text AS amount, c.currency, c.is_at_fault,
         c.vehicle_registration, c.source, c.status, co.name AS company_name,
         to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') AS created_at,
         cl.id AS client_id, cl.first_name, cl.last_name, cl.date_of_birth,
         ARRAY(SELECT DISTINCT d.doc_type FROM identity_documents d WHERE d.client_id = cl.id ORDER BY d.doc_type)::text[] AS document_types
    FROM claims c
    JOIN clients cl ON cl.id = c.client_id
    JOIN companies co ON co.id = c.company_id`;

type Row = Record<string, unknown> & {
  client_id: string;
  first_name: string;
  last_name: string;
  date_of_birth: string;
  document_types: string[];
};
const toClaim = ({ client_id, first_name, last_name, date_of_birth, document_types, ...claim }: Row) => ({
  ...claim,
  client: { id: client_id, first_name, last_name, date_of_birth, id_documents: document_types.map((type) => ({ type })) },
});

const app = Fastify({ logger: false });

app.post<{ Body: { vehicle_registration: string } }>(
  '/search',
  {
    schema: {
      body: { type: 'object', required: ['vehicle_registration'], properties: { vehicle_registration: { type: 'string', maxLength: 20 } } },
    },
  },
  async (request) => {
    const rows = await sql.unsafe<Row[]>(
      `${CLAIM_SELECT}
      WHERE c.vehicle_registration = $1 AND c.claim_date >= (current_date - make_interval(years => $2))::date
        AND (c.import_id IS NULL OR EXISTS (SELECT 1 FROM imports i WHERE i.id = c.import_id AND i.status = 'completed'))
      ORDER BY c.claim_date DESC, c.created_at DESC, c.id DESC`,
      [plateOf(request.body.vehicle_registration), years],
      { prepare: true },
    );
    return { data: rows.map(toClaim), meta: { total_claims: rows.length, query_period: `${years} years` } };
  },
);

type SubmitBody = {
  client: { first_name: string; last_name: string; date_of_birth: string; id_documents: { type: string; number: string }[] };
  claim_date: string;
  vehicle_registration: string;
  claim_type?: string | null;
  amount?: number | string | null;
  is_at_fault?: boolean | null;
};

app.post<{ Body: SubmitBody }>(
  '/submit',
  {
    schema: {
      body: {
        type: 'object',
        required: ['client', 'claim_date', 'vehicle_registration'],
        properties: {
          client: {
            type: 'object',
            required: ['first_name', 'last_name', 'date_of_birth', 'id_documents'],
            properties: {
              first_name: { type: 'string' },
              last_name: { type: 'string' },
              date_of_birth: { type: 'string' },
              id_documents: {
                type: 'array',
                minItems: 1,
                items: {
                  type: 'object',
                  required: ['type', 'number'],
                  properties: { type: { type: 'string' }, number: { type: 'string' } },
                },
              },
            },
          },
          claim_date: { type: 'string' },
          vehicle_registration: { type: 'string', maxLength: 20 },
          claim_type: { type: ['string', 'null'] },
          amount: { type: ['number', 'string', 'null'] },
          is_at_fault: { type: ['boolean', 'null'] },
        },
      },
    },
  },
  async (request, reply) => {
    const b = request.body;
    const docs = b.client.id_documents.map((d) => ({ type: d.type, hash: hashDocument(d.number) }));
    const row = await sql.begin(async (tx) => {
      const [found] = await tx.unsafe<{ client_id: string }[]>(
        'SELECT client_id FROM identity_documents WHERE doc_type = $1 AND number_hash = $2',
        [docs[0]!.type, docs[0]!.hash],
        { prepare: true },
      );
      let clientId = found?.client_id;
      if (!clientId) {
        clientId = randomUUID();
        await tx.unsafe(
          'INSERT INTO clients (id, first_name, last_name, date_of_birth) VALUES ($1, $2, $3, $4)',
          [clientId, b.client.first_name, b.client.last_name, b.client.date_of_birth],
          { prepare: true },
        );
        for (const d of docs) {
          await tx.unsafe(
            'INSERT INTO identity_documents (doc_type, number_hash, client_id) VALUES ($1, $2, $3)',
            [d.type, d.hash, clientId],
            { prepare: true },
          );
        }
      }
      const id = randomUUID();
      await tx.unsafe(
        `INSERT INTO claims (id, company_id, client_id, claim_date, claim_type, amount, currency, is_at_fault, vehicle_registration, source, status)
       VALUES ($1, $2, $3, $4, $5, $6, 'EUR', $7, $8, 'api', 'filed')`,
        [
          id,
          companyId,
          clientId,
          b.claim_date,
          b.claim_type ?? null,
          b.amount ?? null,
          b.is_at_fault ?? null,
          plateOf(b.vehicle_registration),
        ],
        { prepare: true },
      );
      const [out] = await tx.unsafe<Row[]>(`${CLAIM_SELECT} WHERE c.id = $1`, [id], { prepare: true });
      return out!;
    });
    return reply.code(201).send({ data: toClaim(row) });
  },
);

app.get('/healthz', async () => ({ status: 'ok' }));

await app.listen({ port: Number(env('PORT', '3902')), host: '127.0.0.1' });
const close = async () => {
  await app.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
};
process.on('SIGTERM', () => void close());
process.on('SIGINT', () => void close());
