import { auditOrigin } from '../../audit-origin';
import { personActor } from '../../domain/audit/audit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import type { ImportRecord } from '../../db/import-repository';
import { ALLOWED_EXTENSIONS, OPTIONAL_COLUMNS, REQUIRED_COLUMNS } from '../../domain/imports/csv-file';
import type { ReceivedFile } from '../../domain/imports/import-service';
import { importPace } from '../../domain/imports/import-pace';
import { isTerminal } from '../../domain/imports/import-status';
import { companyUser, principalOf, wantsJson } from '../context';
import { text, type FormBody } from '../forms';
import { errorGroups, errorLines, failedRowsFile } from '../import-csv';
import { renderPage } from '../render';
import { webActor } from '../sign-in-flow';
import { fileFieldError, readUploadForm, registerUploadForms, type UploadForm } from '../upload-form';

/** Row errors on a page of the results (the groups above them count them all; the CSV download has them all). */
const ERRORS_ON_PAGE = 100;
const HISTORY_PAGE = 20;

/** The import's pace as the pages show it (src/domain/imports/import-pace.ts): rows a second, and the finish as an RFC 3339 time. */
function paceOf(run: ImportRecord, now: number) {
  const pace = importPace(run, now);
  return {
    rowsPerSecond: pace.rowsPerSecond,
    estimatedFinishAt: pace.estimatedFinishAt === null ? null : new Date(pace.estimatedFinishAt).toISOString(),
  };
}

function statusOf(run: ImportRecord, now: number) {
  return {
    id: run.id,
    status: run.status,
    done: isTerminal(run.status),
    processed: run.rowsDone,
    total: run.rowsTotal,
    imported: run.imported,
    failed: run.failed,
    ...paceOf(run, now),
  };
}

/** Import pages: upload with progress, results with row errors, failed rows as CSV, history. */
export async function importRoutes(app: FastifyInstance) {
  const { config, imports } = app.deps;
  await registerUploadForms(app);

  const help = {
    requiredColumns: REQUIRED_COLUMNS,
    optionalColumns: OPTIONAL_COLUMNS,
    extensions: ALLOWED_EXTENSIONS,
    maxMegabytes: Math.floor((config.importMaxBytes / 1024 / 1024) * 10) / 10,
  };

  async function historyPage(request: FastifyRequest, extra: Record<string, unknown> = {}) {
    const cursor = text(request.query as FormBody, 'cursor', 200);
    const page = await imports.list(principalOf(companyUser(request)), { cursor: cursor || undefined, limit: HISTORY_PAGE });
    return {
      title: 'Import claims',
      history: page.data,
      nextUrl: page.meta.next_cursor ? `/imports?cursor=${encodeURIComponent(page.meta.next_cursor)}` : null,
      isFirstPage: !cursor,
      fileError: null,
      checkResult: null,
      notice: null,
      ...help,
      ...extra,
    };
  }

  app.get('/imports', { config: { access: 'viewer' } }, async (request, reply) => {
    const dropped = text(request.query as FormBody, 'dropped') === '1';
    return renderPage(reply, 'imports', await historyPage(request, { notice: dropped ? 'The file was not imported again.' : null }));
  });

  app.post('/imports', { config: { access: 'member', upload: true } }, async (request, reply) => {
    const principal = principalOf(companyUser(request));
    let form: UploadForm<ReceivedFile>;
    try {
      form = await readUploadForm(
        app,
        request,
        (upload) => imports.receive(principal, upload),
        (received) => imports.discard(received),
      );
    } catch (err) {
      const { status, message } = fileFieldError(err);
      if (wantsJson(request)) return reply.status(status).send({ message });
      return renderPage(reply, 'imports', await historyPage(request, { fileError: message }), status);
    }
    const { received } = form;
    if (form.fields.check_only === 'on') {
      // "Check only": every row validated as a real import would, nothing written.
      const result = await imports.dryRun(principal, received);
      const lines = errorLines(result.errors);
      if (wantsJson(request)) return reply.send({ dry_run: true, ...result });
      return renderPage(
        reply,
        'imports',
        await historyPage(request, {
          checkResult: {
            imported: result.imported,
            failed: result.failed,
            errorGroups: errorGroups(lines),
            errorLines: lines.slice(0, ERRORS_ON_PAGE),
            errorLineCount: lines.length,
            shownLimit: ERRORS_ON_PAGE,
          },
        }),
      );
    }
    // The same file imported recently: the person is asked first (the API imports it as asked).
    const earlier = await app.deps.dashboard.earlierImportOfFile(principal.companyId, received.sha256);
    if (earlier) {
      const previous = request.session.pendingImport;
      if (previous) await imports.discard(previous);
      // Deleted after 24 hours unless confirmed or dropped before (it holds document numbers).
      await imports.hold(principal, received);
      request.session.pendingImport = received;
      if (wantsJson(request)) {
        return reply.status(409).send({ message: 'This file was imported before.', confirmUrl: '/imports/confirm' });
      }
      return reply.redirect('/imports/confirm', 303);
    }
    return startImport(request, reply, received);
  });

  async function startImport(request: FastifyRequest, reply: FastifyReply, received: ReceivedFile) {
    const principal = principalOf(companyUser(request));
    const run = await imports.start(principal, received);
    request.log.info({ importId: run.id }, 'import started from the dashboard');
    if (wantsJson(request)) {
      return reply
        .status(202)
        .send({ ...statusOf(run, app.deps.now()), statusUrl: `/imports/${run.id}/status`, resultUrl: `/imports/${run.id}` });
    }
    // Without the page script: wait for the result like the API does, then show it.
    await imports.waitForResult(principal, run.id, config.importWaitSeconds * 1000);
    return reply.redirect(`/imports/${run.id}`, 303);
  }

  app.get('/imports/confirm', { config: { access: 'member' } }, async (request, reply) => {
    const pending = request.session.pendingImport;
    if (!pending) return reply.redirect('/imports', 303);
    const earlier = await app.deps.dashboard.earlierImportOfFile(companyUser(request).companyId, pending.sha256);
    return renderPage(reply, 'import-confirm', { title: 'Import this file again?', pending, earlier });
  });

  app.post('/imports/confirm', { config: { access: 'member' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const pending = request.session.pendingImport;
    if (!pending) return reply.redirect('/imports', 303);
    request.session.pendingImport = undefined;
    if (text(request.body as FormBody, 'action', 20) !== 'import') {
      await imports.discard(pending);
      return reply.redirect('/imports?dropped=1', 303);
    }
    await imports.release(pending);
    return startImport(request, reply, pending);
  });

  app.get('/imports/:id/status', { config: { access: 'viewer' } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    return reply.send(statusOf(await imports.get(principalOf(companyUser(request)), id), app.deps.now()));
  });

  app.get('/imports/:id', { config: { access: 'viewer' } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const run = await imports.get(principalOf(companyUser(request)), id);
    const lines = errorLines(run.errors ?? []);
    const pages = Math.max(1, Math.ceil(lines.length / ERRORS_ON_PAGE));
    const page = Math.min(pages, Math.max(1, Number.parseInt(text(request.query as FormBody, 'page', 10), 10) || 1));
    return renderPage(reply, 'import', {
      title: `Import of ${run.fileName}`,
      run,
      done: isTerminal(run.status),
      pace: paceOf(run, app.deps.now()),
      errorGroups: errorGroups(lines),
      errorLines: lines.slice((page - 1) * ERRORS_ON_PAGE, page * ERRORS_ON_PAGE),
      errorLineCount: lines.length,
      errorPage: page,
      errorPages: pages,
      firstShown: (page - 1) * ERRORS_ON_PAGE + 1,
    });
  });

  app.post('/imports/:id/cancel', { config: { access: 'member' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const user = companyUser(request);
    await imports.cancel(principalOf(user), id, { actor: personActor(user), origin: auditOrigin(request) });
    return reply.redirect(`/imports/${id}`, 303);
  });

  app.get('/imports/:id/failed-rows.csv', { config: { access: 'viewer' } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    // The same file as GET /api/v1/imports/{id}/errors.csv.
    const user = companyUser(request);
    const file = await imports.failedRows(principalOf(user), id);
    await request.server.deps.audit.recordDownload({
      what: 'failed rows',
      companyId: user.companyId,
      of: { type: 'import', id: file.run.id },
      by: { actor: webActor(request) },
      origin: auditOrigin(request),
    });
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="import-${file.run.id.slice(0, 8)}-failed-rows.csv"`)
      .send(failedRowsFile(file.header, file.rows));
  });
}
