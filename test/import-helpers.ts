import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Readable } from 'node:stream';

import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';

import { minusYears, todayIn } from '../src/domain/dates';

import { companyPrincipal, docNumber, plate, type Company, type TestContext } from './harness';

export const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
export const fixture = (name: string): Buffer => fs.readFileSync(path.join(FIXTURES, name));

export const HEADER =
  'first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration,claim_type,amount,currency,is_at_fault,status';

/** A claim date safely inside the 3-year window, whatever today is. */
export const recentDate = (daysAgo = 30): string => {
  const d = new Date(`${todayIn('UTC')}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - daysAgo);
  return d.toISOString().slice(0, 10);
};
export const tooOldDate = (): string => minusYears(recentDate(0), 4);
export const futureDate = (): string => {
  const d = new Date(`${todayIn('UTC')}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 10);
  return d.toISOString().slice(0, 10);
};

export { docNumber, plate } from './harness';

export type CsvRow = Partial<
  Record<
    | 'first_name'
    | 'last_name'
    | 'date_of_birth'
    | 'id_type'
    | 'id_number'
    | 'claim_date'
    | 'vehicle_registration'
    | 'claim_type'
    | 'amount'
    | 'currency'
    | 'is_at_fault'
    | 'status',
    string
  >
>;

export function validRow(overrides: CsvRow = {}): CsvRow {
  return {
    first_name: 'Ona',
    last_name: 'Petraitė',
    date_of_birth: '1985-06-02',
    id_type: 'passport',
    id_number: docNumber(),
    claim_date: recentDate(),
    vehicle_registration: plate(),
    claim_type: 'accident',
    amount: '1250.50',
    currency: 'EUR',
    is_at_fault: 'false',
    status: 'filed',
    ...overrides,
  };
}

const quote = (v: string, delimiter: string) => (/["\r\n]/u.test(v) || v.includes(delimiter) ? `"${v.replace(/"/gu, '""')}"` : v);

/** A CSV text with the full header (or `columns`), one line per row. */
export function csv(rows: CsvRow[], opts: { columns?: string[]; delimiter?: string; eol?: string } = {}): string {
  const columns = opts.columns ?? HEADER.split(',');
  const d = opts.delimiter ?? ',';
  const eol = opts.eol ?? '\n';
  const lines = [
    columns.join(d),
    ...rows.map((r) => columns.map((c) => quote((r as Record<string, string | undefined>)[c] ?? '', d)).join(d)),
  ];
  return lines.join(eol) + eol;
}

/** A multipart/form-data body with one file part, after the text `fields` when given. */
export async function multipart(
  content: string | Buffer,
  opts: { fileName?: string | undefined; field?: string | undefined; fields?: Record<string, string> } = {},
) {
  const form = new FormData();
  for (const [name, value] of Object.entries(opts.fields ?? {})) form.append(name, value);
  form.append(opts.field ?? 'file', new Blob([content]), opts.fileName ?? 'claims.csv');
  const res = new Response(form);
  return { payload: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get('content-type')! };
}

/**
 * Posts a multipart form over a socket to `base` + `url`: `fields`, then `file` as the part `file`.
 * Unless `end`, the body is never finished, so that only an answer given before the end of the
 * upload settles the promise.
 */
export function sendUpload(
  base: string,
  url: string,
  headers: Record<string, string>,
  fields: Record<string, string>,
  file: Buffer,
  end: boolean,
): Promise<{ status: number; body: string }> {
  const boundary = 'send-upload-boundary';
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${url}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        resolve({ status: res.statusCode!, body });
        req.destroy();
      });
    });
    req.on('error', reject);
    for (const [name, value] of Object.entries(fields)) {
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
    }
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="upload.csv"\r\nContent-Type: text/csv\r\n\r\n`);
    req.write(file);
    if (end) req.end(`\r\n--${boundary}--\r\n`);
  });
}

/** POST /api/v1/claims/import (or `url`) through inject. */
export async function postImport(
  app: FastifyInstance,
  auth: Record<string, string>,
  content: string | Buffer,
  opts: { fileName?: string; field?: string; headers?: Record<string, string>; url?: string } = {},
) {
  const body = await multipart(content, opts);
  return app.inject({
    method: 'POST',
    url: opts.url ?? '/api/v1/claims/import',
    headers: { ...auth, 'content-type': body.contentType, ...opts.headers },
    payload: body.payload,
  });
}

/**
 * POST /api/v1/claims/import with `Prefer: respond-async` over a socket, as a client sends it (the
 * server reads it a socket's read at a time; inject hands it over whole): the app listens on a
 * loopback port first if it does not yet. Expects the 202 and returns the import's id.
 */
export async function postImportOverSocket(app: FastifyInstance, auth: Record<string, string>, content: string | Buffer): Promise<string> {
  const address = app.server.listening
    ? `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    : await app.listen({ port: 0, host: '127.0.0.1' });
  const form = await multipart(content);
  const res = await fetch(`${address}/api/v1/claims/import`, {
    method: 'POST',
    headers: { ...auth, 'content-type': form.contentType, prefer: 'respond-async' },
    body: form.payload,
  });
  const body = (await res.json()) as { data: { id: string } };
  expect(res.status, JSON.stringify(body)).toBe(202);
  return body.data.id;
}

/** POST /api/v1/lookups/batch through inject: the file (plates.csv), after the `purpose` field when given. */
export async function postLookupBatch(
  app: FastifyInstance,
  auth: Record<string, string>,
  content: string | Buffer,
  opts: { fileName?: string; field?: string; purpose?: string } = {},
) {
  const body = await multipart(content, {
    fileName: opts.fileName ?? 'plates.csv',
    field: opts.field,
    ...(opts.purpose === undefined ? {} : { fields: { purpose: opts.purpose } }),
  });
  return app.inject({
    method: 'POST',
    url: '/api/v1/lookups/batch',
    headers: { ...auth, 'content-type': body.contentType },
    payload: body.payload,
  });
}

/** Polls GET /api/v1/imports/:id until the import is finished; throws if it is not within `timeoutMs`. */
export async function waitForImport(app: FastifyInstance, auth: Record<string, string>, id: string, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: auth });
    const data = res.json().data;
    if (data.status === 'completed' || data.status === 'failed') return data;
    if (Date.now() > until) throw new Error(`import ${id} did not finish in ${timeoutMs} ms (status ${data.status})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Stores the file and records the import (queued) without queueing a job, so that a test runs it itself. */
export async function recordImport(ctx: TestContext, company: Company, content: string): Promise<string> {
  const file = await ctx.deps.imports.receive(companyPrincipal(company), {
    fileName: 'claims.csv',
    stream: Readable.from([Buffer.from(content)]),
    truncated: () => false,
  });
  await ctx.deps.repos.imports.insert({
    id: file.importId,
    companyId: company.id,
    fileName: file.fileName,
    objectKey: file.objectKey,
    sizeBytes: file.size,
    rowsTotal: file.dataRows,
  });
  return file.importId;
}
