import type { PendingUploadsPort } from '../domain/imports/ports';
import type { Queryable } from './db';

/** Files uploaded in the dashboard and waiting at "import this file again?" (migration 0019). */
export function createPendingUploadRepository(db: Queryable): PendingUploadsPort {
  return {
    async note(objectKey, companyId, at) {
      await db.query(
        `INSERT INTO pending_uploads (object_key, company_id, created_at) VALUES ($1, $2, to_timestamp($3::bigint / 1000.0))
         ON CONFLICT (object_key) DO NOTHING`,
        [objectKey, companyId, at],
      );
    },
    async forget(objectKey) {
      await db.query('DELETE FROM pending_uploads WHERE object_key = $1', [objectKey]);
    },
    async expired(before, limit) {
      const rows = await db.query<{ object_key: string }>(
        `SELECT object_key FROM pending_uploads WHERE created_at < to_timestamp($1::bigint / 1000.0) ORDER BY created_at LIMIT $2`,
        [before, limit],
      );
      return rows.map((r) => r.object_key);
    },
  };
}
