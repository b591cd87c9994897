import { auditOrigin } from '../../audit-origin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FromSchema } from 'json-schema-to-ts';

import type { ImportRecord } from '../../db/import-repository';
import { AppError, validationError } from '../../domain/errors';
import { fileMessages } from '../../domain/imports/csv-file';
import { importMessages } from '../../domain/imports/import-messages';
import type { ReceivedFile } from '../../domain/imports/import-service';
import { importResource, summaryOf } from '../import-resource';
import { failedRowsFile } from '../../domain/imports/failed-rows-file';
import { beginIdempotent, fileRequestHash, idempotencyOnSend } from '../plugins/idempotency';
import {
  bodyErrors,
  commonErrors,
  contentEncodingHeader,
  errorBody,
  idempotencyKeyHeader,
  locationHeader,
  preferHeader,
  uploadErrors,
  validationErrorBody,
} from '../schemas/common';
import type { ApiTypeProvider } from '../schemas/type-provider';
import { importBodyDoc, importEnvelope, importIdParams, importPage, importSummary, listImportsQuery } from '../schemas/imports';
import { receiveFilePart, registerUploadParser } from './upload-part';

const security = [{ bearerAuth: [] }];
const notFound = { 404: { description: 'Unknown import id, or an import of another company', ...errorBody } } as const;
const locationOf = (id: string) => `/api/v1/imports/${id}`;

const toDetail = (run: ImportRecord, now: number) => ({
  ...importResource(run, now),
  summary: run.status === 'completed' ? summaryOf(run) : null,
});

/**
 * `?dry_run=true` (any case). The upload route validates nothing itself (its body is a stream), so
 * the query is read as sent, not as its schema's boolean.
 */
const isDryRun = (request: FastifyRequest) => new URLSearchParams(request.url.split('?')[1] ?? '').get('dry_run')?.toLowerCase() === 'true';
const summaryFrom = (r: { imported: number; failed: number; errors: { row: number; messages: Record<string, string[]> }[] }) => ({
  message: importMessages.finished(r.imported, r.failed),
  imported: r.imported,
  failed: r.failed,
  errors: r.errors,
});

const wantsAsync = (request: FastifyRequest) => /(^|[\s,;])respond-async($|[\s,;])/iu.test(String(request.headers.prefer ?? ''));

/** 202 with the import's handle, as for `Prefer: respond-async` and for a wait that ran out. */
function accepted(reply: FastifyReply, run: ImportRecord) {
  return reply
    .code(202)
    .header('location', locationOf(run.id))
    .send({ data: toDetail(run, reply.server.deps.now()) });
}

/**
 * The answer once the job settled: the summary (200), or the file's problem (422) or a failure
 * (500), which leave through the error handler like every other error of the API.
 */
function outcome(reply: FastifyReply, run: ImportRecord) {
  if (run.status === 'completed')
    return reply
      .code(200)
      .header('location', locationOf(run.id))
      .send({ id: run.id, ...summaryOf(run) });
  if (run.status === 'failed' && run.failure === 'invalid_file') throw validationError({ file: [run.message ?? fileMessages.empty] });
  if (run.status === 'failed') throw new AppError('INTERNAL', run.message ?? 'Server error.');
  if (run.status === 'cancelled') return reply.code(200).send({ data: toDetail(run, reply.server.deps.now()) });
  return accepted(reply, run);
}

/**
 * Idempotency-Key for an upload, whose fingerprint is known only once the file is stored: true
 * when the first response was replayed. The stored file is kept only for a new request.
 */
async function beginUpload(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, file: ReceivedFile): Promise<boolean> {
  let replayed: boolean;
  try {
    replayed = await beginIdempotent(app, request, reply, fileRequestHash(request, file.sha256));
  } catch (err) {
    await app.deps.imports.discard(file); // the key was used for another file, or is still running
    throw err;
  }
  if (replayed) await app.deps.imports.discard(file);
  return replayed;
}

/**
 * CSV import: POST /claims/import and the imports resource. The upload is streamed to storage
 * (checked on its way), then processed as a job; the request waits for it up to
 * IMPORT_WAIT_SECONDS, or answers 202 at once with `Prefer: respond-async`.
 */
export async function importRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ApiTypeProvider>();
  const { config, imports } = app.deps;
  await registerUploadParser(app);
  app.addHook('onReady', async () => {
    const resumed = await imports.resumeUnfinished();
    if (resumed > 0) app.log.info({ resumed }, 'resumed unfinished imports');
  });

  app.post(
    '/claims/import',
    {
      schema: {
        operationId: 'importClaims',
        summary: 'Import claims from a CSV file',
        description:
          'multipart/form-data with one part `file` (.csv or .txt, UTF-8, at most IMPORT_MAX_BYTES). Rows are validated independently; ' +
          'the response lists every failed row with its spreadsheet row number. With `Prefer: respond-async`, or when the import takes ' +
          'longer than IMPORT_WAIT_SECONDS, the answer is 202 with a Location to poll. Accepts an `Idempotency-Key` header. ' +
          'With `?dry_run=true` every row is validated exactly as a real import would (identity rules against the stored persons ' +
          'included) and the same summary comes back with `"dry_run": true`; nothing is written and no idempotency record is kept. ' +
          'The body may be sent gzip-compressed (`Content-Encoding: gzip`), and the file part may be a gzip file itself.',
        tags: ['imports'],
        security,
        consumes: ['multipart/form-data'],
        headers: {
          type: 'object',
          properties: { ...idempotencyKeyHeader.properties, ...preferHeader.properties, ...contentEncodingHeader.properties },
        },
        querystring: {
          type: 'object',
          properties: {
            dry_run: {
              type: 'boolean',
              default: false,
              description: 'Validate only: the summary a real import would give, nothing written',
            },
          },
        },
        body: importBodyDoc,
        response: {
          200: {
            description:
              "The import finished (also when every row failed), with `Location: /api/v1/imports/{id}`; or the dry run's summary (no `id`, no `Location`: nothing was kept)",
            ...importSummary,
            properties: {
              id: { type: 'string', format: 'uuid', description: "The import's id (absent for a dry run)" },
              ...importSummary.properties,
              dry_run: { type: 'boolean', description: 'Present and true for a dry run' },
            },
            headers: { location: { ...locationHeader.location, description: 'The import: /api/v1/imports/{id} (absent for a dry run)' } },
          },
          202: { description: 'The import is queued or running; poll the Location', ...importEnvelope, headers: locationHeader },
          ...commonErrors,
          ...bodyErrors,
          409: { description: 'A request with the same Idempotency-Key is still running', ...errorBody },
          422: {
            description: 'The file is invalid (nothing was imported), or the Idempotency-Key was used for another request',
            ...validationErrorBody,
          },
          ...uploadErrors,
        },
      },
      // The body is a stream the handler reads and checks itself; the schema above documents it.
      validatorCompiler: () => () => true,
      onSend: idempotencyOnSend(app),
      config: { access: { scope: 'imports' }, upload: true },
    },
    async (request, reply) => {
      const file = await receiveFilePart(request, (upload) => imports.receive(request.principal, upload));
      if (isDryRun(request)) {
        // Validates every row as a real import would; writes nothing, keeps no idempotency record.
        const result = await imports.dryRun(request.principal, file);
        return reply.code(200).send({ ...summaryFrom(result), dry_run: true });
      }
      if (await beginUpload(app, request, reply, file)) return reply;
      const run = await imports.start(request.principal, file);
      if (wantsAsync(request)) return accepted(reply.header('preference-applied', 'respond-async'), run);
      // The wait can be longer than the server's idle-socket timeout.
      const socket = request.raw.socket as { setTimeout?: (ms: number) => unknown } | undefined;
      socket?.setTimeout?.(config.importWaitSeconds * 1000 + 30_000);
      return outcome(reply, await imports.waitForResult(request.principal, run.id, config.importWaitSeconds * 1000));
    },
  );

  app.get(
    '/imports/:id',
    {
      config: { access: { scope: 'imports' } },
      schema: {
        operationId: 'getImport',
        summary: 'Status, progress and (when done) the summary of one of your imports',
        tags: ['imports'],
        security,
        params: importIdParams,
        response: { 200: importEnvelope, ...commonErrors, ...notFound },
      },
    },
    async (request) => ({ data: toDetail(await imports.get(request.principal, request.params.id), app.deps.now()) }),
  );

  // The answer is a stream, which the typed `app` would hold to the documented string: only the params are typed here.
  fastify.get<{ Params: FromSchema<typeof importIdParams> }>(
    '/imports/:id/errors.csv',
    {
      config: { access: { scope: 'imports' } },
      schema: {
        operationId: 'getImportErrorsCsv',
        summary: 'The rejected rows of one of your imports as a CSV file',
        description:
          'The rows that were not imported, with the uploaded columns in their original order (`id_number` left empty: document ' +
          'numbers are never given back), then `row` (the row number) and `errors` (`field: message; ...`). Fix the rows, delete ' +
          'the last two columns and upload the file again.',
        tags: ['imports'],
        security,
        params: importIdParams,
        response: {
          200: { description: 'CSV (UTF-8 with a BOM)', content: { 'text/csv': { schema: { type: 'string' } } } },
          ...commonErrors,
          ...notFound,
        },
      },
    },
    async (request, reply) => {
      const file = await imports.failedRows(request.principal, request.params.id);
      await fastify.deps.audit.recordDownload({
        what: 'failed rows',
        companyId: request.principal.companyId,
        of: { type: 'import', id: file.run.id },
        by: { principal: request.principal },
        origin: auditOrigin(request),
      });
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="import-${file.run.id.slice(0, 8)}-errors.csv"`)
        .send(failedRowsFile(file.header, file.rows));
    },
  );

  app.post(
    '/imports/:id/cancel',
    {
      config: { access: { scope: 'imports' } },
      schema: {
        operationId: 'cancelImport',
        summary: 'Cancel one of your imports',
        description:
          'Queued or already cancelled: 200 with the import (a queued import never starts). Processing: 202; it stops after the ' +
          'chunk it is writing, then shows `cancelled`. A cancelled import leaves no claim visible. Completed or failed: 409.',
        tags: ['imports'],
        security,
        params: importIdParams,
        response: {
          200: { description: 'Cancelled', ...importEnvelope, headers: locationHeader },
          202: {
            description: 'Cancelling: the chunks in flight finish or roll back, then it stops',
            ...importEnvelope,
            headers: locationHeader,
          },
          409: { description: 'The import has already finished', ...errorBody },
          ...commonErrors,
          ...notFound,
        },
      },
    },
    async (request, reply) => {
      const { run, accepted } = await imports.cancel(request.principal, request.params.id, { origin: auditOrigin(request) });
      return reply
        .code(accepted ? 202 : 200)
        .header('location', locationOf(run.id))
        .send({ data: toDetail(run, app.deps.now()) });
    },
  );

  app.get(
    '/imports',
    {
      config: { access: { scope: 'imports' } },
      schema: {
        operationId: 'listImports',
        summary: "List your company's imports, newest first",
        tags: ['imports'],
        security,
        querystring: listImportsQuery,
        response: { 200: importPage, ...commonErrors },
      },
    },
    async (request) => {
      const page = await imports.list(request.principal, request.query);
      const now = app.deps.now();
      return { ...page, data: page.data.map((run) => importResource(run, now)) };
    },
  );
}
