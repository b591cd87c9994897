import { answerTime } from '../domain/dates';
import { byColumn, importMessages } from '../domain/imports/import-messages';
import { importPace } from '../domain/imports/import-pace';
import type { ImportRecord } from '../domain/imports/ports';

/**
 * The import resource as the API lists it and as webhook events carry it (without row errors;
 * GET /imports/{id} adds the summary). `now`: the service's clock (ms), for the pace of an import
 * being processed (src/domain/imports/import-pace.ts).
 */
export function importResource(run: ImportRecord, now: number) {
  const pace = importPace(run, now);
  return {
    id: run.id,
    status: run.status,
    file_name: run.fileName,
    size_bytes: run.sizeBytes,
    progress: {
      rows_done: run.rowsDone,
      rows_total: run.rowsTotal,
      rows_per_second: pace.rowsPerSecond,
      estimated_finish_at: pace.estimatedFinishAt === null ? null : answerTime(pace.estimatedFinishAt),
    },
    imported: run.imported,
    failed: run.failed,
    message: run.status === 'completed' ? summaryOf(run).message : run.status === 'cancelled' ? importMessages.cancelled : run.message,
    created_at: run.createdAt,
    finished_at: run.finishedAt,
    // Kept to the millisecond (src/db/import-repository.ts); answered as every other time.
    history: run.history.map((h) => ({ ...h, at: answerTime(h.at) })),
  };
}

/** A completed import's summary: its counts and its row errors, their messages in column order. */
export function summaryOf(run: ImportRecord) {
  const imported = run.imported ?? 0;
  const failed = run.failed ?? 0;
  const errors = (run.errors ?? []).map((e) => ({ row: e.row, messages: byColumn(e.messages) }));
  return { message: importMessages.finished(imported, failed), imported, failed, errors };
}
