import type { FastifyInstance } from 'fastify';

import { auditOrigin } from '../../audit-origin';

import { bodyErrors, commonErrors, contentEncodingHeader, errorBody, locationHeader, uploadErrors } from '../schemas/common';
import { lookupBatchBodyDoc, lookupBatchEnvelope, lookupBatchParams } from '../schemas/lookup-batches';
import { receiveFilePart, registerUploadParser } from './upload-part';

const security = [{ bearerAuth: [] }];
const notFound = { 404: { description: 'Unknown batch id, or a batch of another company (not_found)', ...errorBody } } as const;
const locationOf = (id: string) => `/api/v1/lookups/batch/${id}`;

/** Batch plate look-ups: a file of plates answered for all of them by a job, then a results file. */
export async function lookupBatchRoutes(app: FastifyInstance) {
  const { lookupBatches, batchQueue } = app.deps;
  await registerUploadParser(app);
  if (batchQueue.kind === 'in-process') {
    app.addHook('onReady', async () => {
      const resumed = await lookupBatches.resumeUnfinished();
      if (resumed > 0) app.log.info({ resumed }, 'resumed unfinished batch look-ups');
    });
  }

  app.post(
    '/lookups/batch',
    {
      schema: {
        operationId: 'createLookupBatch',
        summary: 'Look up a whole file of plates at once',
        description:
          'multipart/form-data: one `file` part, a CSV (.csv or .txt, UTF-8, at most IMPORT_MAX_BYTES) with a `vehicle_registration` ' +
          'column (other columns are ignored) and at most 100,000 data rows, and an optional `purpose` field before it. A bad file ' +
          "is a 422 with the import's file errors. Answers 202 with the batch and `Location`; a job looks every plate up (each " +
          'distinct plate is a `plate_search` entry of your look-up log, with the purpose and its result count). Poll the batch, ' +
          'then download `results.csv`. The body may be sent gzip-compressed (`Content-Encoding: gzip`), and the file part may be a gzip file itself.',
        tags: ['registry'],
        security,
        consumes: ['multipart/form-data'],
        headers: contentEncodingHeader,
        body: lookupBatchBodyDoc,
        response: {
          202: {
            description: 'The batch, queued, with `Location: /api/v1/lookups/batch/{id}`',
            ...lookupBatchEnvelope,
            headers: locationHeader,
          },
          ...commonErrors,
          ...bodyErrors,
          ...uploadErrors,
        },
      },
      // The body is a stream read by the handler (as the import's); the schema documents it.
      validatorCompiler: () => () => true,
      // The upload is not counted against the token's rate limit; each plate of the file is.
      config: { access: { scope: 'search' }, upload: true, countsPerPlate: true },
    },
    async (request, reply) => {
      const data = await receiveFilePart(request, (upload, fields) =>
        lookupBatches.submit(
          request.principal,
          upload,
          // The `purpose` form field (sent before the file), or the `purpose` query parameter.
          fields.purpose ?? (request.query as { purpose?: unknown } | undefined)?.purpose,
          (plates) => app.rateLimits.countMany(request, reply, plates),
        ),
      );
      return reply.code(202).header('location', locationOf(data.id)).send({ data });
    },
  );

  app.get(
    '/lookups/batch/:id',
    {
      config: { access: { scope: 'search' } },
      schema: {
        operationId: 'getLookupBatch',
        summary: 'A batch plate look-up: status (queued, processing, completed, failed) and progress',
        tags: ['registry'],
        security,
        params: lookupBatchParams,
        response: { 200: lookupBatchEnvelope, ...commonErrors, ...notFound },
      },
    },
    async (request) => ({ data: await lookupBatches.get(request.principal, (request.params as { id: string }).id) }),
  );

  app.get(
    '/lookups/batch/:id/results.csv',
    {
      config: { access: { scope: 'search' } },
      schema: {
        operationId: 'getLookupBatchResults',
        summary: 'The results of a completed batch: one line per distinct normalized plate, in file order',
        description:
          '`vehicle_registration,claims,companies,latest_claim_date`: the claims within the search window (all companies, yours ' +
          'included), the number of companies they belong to, and the latest claim date (empty when none). 409 until the batch completed.',
        tags: ['registry'],
        security,
        params: lookupBatchParams,
        response: {
          200: {
            description: 'CSV (UTF-8, CRLF)',
            content: {
              'text/csv': {
                schema: {
                  type: 'string',
                  examples: ['vehicle_registration,claims,companies,latest_claim_date\r\nAB123C,2,2,2026-03-14\r\n'],
                },
              },
            },
          },
          ...commonErrors,
          ...notFound,
          409: { description: 'The batch has not completed (conflict)', ...errorBody },
        },
      },
    },
    async (request, reply) => {
      const { batch, csv } = await lookupBatches.results(request.principal, (request.params as { id: string }).id);
      await app.deps.audit.recordDownload({
        what: 'batch results',
        companyId: request.principal.companyId,
        of: { type: 'lookup_batch', id: batch.id },
        by: { principal: request.principal },
        origin: auditOrigin(request),
      });
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="lookup-batch-${batch.id.slice(0, 8)}-results.csv"`)
        .send(csv);
    },
  );
}
