import type { FastifyInstance } from 'fastify';

import { MAX_BATCH_ROWS, type LookupBatch } from '../../domain/lookups/lookup-batch';
import { monthBarChart } from '../chart';
import { companyUser, principalOf } from '../context';
import { text, type FormBody } from '../forms';
import { auditOrigin } from '../../audit-origin';
import { renderPage } from '../render';
import { webActor } from '../sign-in-flow';
import { fileFieldError, readUploadForm, registerUploadForms } from '../upload-form';

const PAGE_SIZE = 25;

/** Bars of a chart of named values (the overview's chart geometry, one bar per name). */
const namedChart = (values: { label: string; value: number }[]) =>
  monthBarChart(values.map((v, i) => ({ month: String(i), label: v.label, claims: v.value })));

const batchDone = (b: LookupBatch) => b.status === 'completed' || b.status === 'failed';

/** The dashboard's pages for alerts, batch plate look-ups and data quality. */
export async function registryExtrasRoutes(app: FastifyInstance) {
  const { alerts, lookupBatches, quality } = app.deps;
  await registerUploadForms(app);

  app.get('/alerts', { config: { access: 'viewer' } }, async (request, reply) => {
    const cursor = text(request.query as FormBody, 'cursor', 200);
    const page = await alerts.list(principalOf(companyUser(request)), { cursor: cursor || undefined, limit: PAGE_SIZE });
    return renderPage(reply, 'alerts', {
      title: 'Alerts',
      alerts: page.data,
      isFirstPage: !cursor,
      nextUrl: page.meta.next_cursor ? `/alerts?cursor=${encodeURIComponent(page.meta.next_cursor)}` : null,
    });
  });

  app.get('/lookups/batch', { config: { access: 'member' } }, async (_request, reply) =>
    renderPage(reply, 'lookup-batch-new', { title: 'Check a file of plates', maxRows: MAX_BATCH_ROWS }),
  );

  app.post('/lookups/batch', { config: { access: 'member', upload: true } }, async (request, reply) => {
    const principal = principalOf(companyUser(request));
    let batch: LookupBatch;
    try {
      ({ received: batch } = await readUploadForm(app, request, (upload, fields) =>
        lookupBatches.submit(principal, upload, fields.purpose),
      ));
    } catch (err) {
      const { status, message } = fileFieldError(err);
      return renderPage(
        reply,
        'lookup-batch-new',
        { title: 'Check a file of plates', maxRows: MAX_BATCH_ROWS, fileError: message },
        status,
      );
    }
    return reply.redirect(`/lookups/batch/${batch.id}`, 303);
  });

  app.get('/lookups/batch/:id', { config: { access: 'viewer' } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const principal = principalOf(companyUser(request));
    const batch = await lookupBatches.get(principal, id);
    const done = batchDone(batch);
    return renderPage(reply, 'lookup-batch', {
      title: 'Plate file check',
      batch,
      done,
      counts: done ? await lookupBatches.counts(principal, id) : null,
      percent: batch.plates === 0 ? 100 : Math.floor((batch.rows_done / batch.plates) * 100),
      ...(done ? {} : { refreshSeconds: 2 }),
    });
  });

  app.get('/lookups/batch/:id/results.csv', { config: { access: 'viewer' } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const user = companyUser(request);
    const { batch, csv } = await lookupBatches.results(principalOf(user), id);
    await app.deps.audit.recordDownload({
      what: 'batch results',
      companyId: user.companyId,
      of: { type: 'lookup_batch', id: batch.id },
      by: { actor: webActor(request) },
      origin: auditOrigin(request),
    });
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="lookup-batch-${batch.id.slice(0, 8)}-results.csv"`)
      .send(csv);
  });

  app.get('/quality', { config: { access: 'viewer' } }, async (request, reply) => {
    const days = text(request.query as FormBody, 'days', 4) || undefined;
    const report = await quality.report(principalOf(companyUser(request)), days);
    const pct = (x: number) => Math.round(x * 1000) / 10;
    return renderPage(reply, 'quality', {
      title: 'Data quality',
      report,
      sourceChart: namedChart([
        { label: 'API', value: report.by_source.api },
        { label: 'Import', value: report.by_source.bulk_import },
        { label: 'Dashboard', value: report.by_source.assisted },
      ]),
      missingChart: namedChart([
        { label: 'Type', value: pct(report.missing.claim_type) },
        { label: 'Amount', value: pct(report.missing.amount) },
        { label: 'At-fault', value: pct(report.missing.is_at_fault) },
        { label: 'Rejected', value: pct(report.import_rejection_rate) },
      ]),
      pct,
    });
  });

  app.get('/operator/quality', { config: { access: 'operator' } }, async (request, reply) => {
    const days = text(request.query as FormBody, 'days', 4) || undefined;
    const rows = await quality.allCompanies(days);
    return renderPage(reply, 'operator-quality', { title: 'Data quality by company', rows, days: rows[0]?.report.period_days ?? 90 });
  });
}
