import type { Queryable } from './db';

/**
 * Import jobs by state for the in-process runner, whose queue is the imports table: queued ones
 * wait, processing ones are active. An operator's aggregate over every company (no company's rows
 * are read, only counted).
 */
export async function importJobCounts(db: Queryable): Promise<{ waiting: number; active: number; failed: number }> {
  const rows = await db.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM imports WHERE status IN ('queued', 'processing', 'failed') GROUP BY status`,
  );
  const of = (status: string) => rows.find((r) => r.status === status)?.n ?? 0;
  return { waiting: of('queued'), active: of('processing'), failed: of('failed') };
}
