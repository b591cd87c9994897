import { createHash } from 'node:crypto';

import type { SessionRepository } from './dashboard-repository';

/** A session that nobody signed in to (the sign-in form's CSRF secret) lives at most this long. */
export const ANONYMOUS_SESSION_MS = 60 * 60 * 1000;
const PURGE_EVERY_MS = 10 * 60 * 1000;

const hashId = (sid: string) => createHash('sha256').update(sid, 'utf8').digest('hex');

/**
 * Dashboard sessions kept in the database, so that they survive a restart and are shared by
 * several server processes. Only a hash of the session id is stored. Expired rows are purged now
 * and then as a side effect of saving one.
 */
export function createSessionService({ repos, now = () => Date.now() }: { repos: { sessions: SessionRepository }; now?: () => number }) {
  let lastPurge = 0;

  async function purgeNowAndThen(): Promise<void> {
    if (now() - lastPurge < PURGE_EVERY_MS) return;
    lastPurge = now();
    await repos.sessions.deleteExpired();
  }

  return {
    async get(sid: string): Promise<Record<string, unknown> | undefined> {
      const data = await repos.sessions.find(hashId(sid));
      if (data === undefined) return undefined;
      const parsed: unknown = JSON.parse(data);
      return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
    },
    /** Stores the session's data; the person it belongs to (if any) is kept in its own column so removing them ends it. */
    async save(sid: string, data: object, userId: string | null, expiresAt: Date): Promise<void> {
      const cap = userId ? expiresAt.getTime() : Math.min(expiresAt.getTime(), now() + ANONYMOUS_SESSION_MS);
      await repos.sessions.upsert({ sidHash: hashId(sid), userId, data: JSON.stringify(data), expiresAt: new Date(cap) });
      await purgeNowAndThen();
    },
    async destroy(sid: string): Promise<void> {
      await repos.sessions.delete(hashId(sid));
    },
  };
}
export type SessionService = ReturnType<typeof createSessionService>;
