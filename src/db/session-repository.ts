import type { SessionRepository } from '../domain/dashboard/dashboard-repository';
import type { Queryable } from './db';

/** Rows of web_sessions. Callers pass the id's hash, never the id itself. */
export function createSessionRepository(db: Queryable): SessionRepository {
  return {
    /** The session's JSON data, unless it is unknown or expired. */
    async find(sidHash: string): Promise<string | undefined> {
      const rows = await db.query<{ data: string }>(
        'SELECT data::text AS data FROM web_sessions WHERE sid_hash = $1 AND expires_at > now()',
        [sidHash],
      );
      return rows[0]?.data;
    },
    async upsert(s: { sidHash: string; userId: string | null; data: string; expiresAt: Date }): Promise<void> {
      await db.query(
        `INSERT INTO web_sessions (sid_hash, user_id, data, expires_at) VALUES ($1, $2, $3::text::jsonb, $4)
         ON CONFLICT (sid_hash) DO UPDATE SET user_id = EXCLUDED.user_id, data = EXCLUDED.data,
           expires_at = EXCLUDED.expires_at, updated_at = now()`,
        [s.sidHash, s.userId, s.data, s.expiresAt.toISOString()],
      );
    },
    async delete(sidHash: string): Promise<void> {
      await db.query('DELETE FROM web_sessions WHERE sid_hash = $1', [sidHash]);
    },
    async deleteExpired(): Promise<number> {
      const rows = await db.query<{ n: number }>(
        'WITH d AS (DELETE FROM web_sessions WHERE expires_at <= now() RETURNING 1) SELECT count(*)::int AS n FROM d',
      );
      return Number(rows[0]?.n ?? 0);
    },
  };
}
