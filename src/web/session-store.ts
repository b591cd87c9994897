import type { SessionStore } from '@fastify/session';
import type { Session } from 'fastify';

import type { SessionService } from '../domain/dashboard/session-service';

/** @fastify/session's store interface over the database-backed session service. */
export function createSessionStore(sessions: SessionService): SessionStore {
  return {
    set(sid, session, callback) {
      const s = session as Session & { userId?: string };
      const expires = s.cookie.expires instanceof Date ? s.cookie.expires : new Date(Date.now() + (s.cookie.originalMaxAge ?? 0));
      sessions.save(sid, JSON.parse(JSON.stringify(session)) as object, s.userId ?? null, expires).then(() => callback(), callback);
    },
    get(sid, callback) {
      sessions.get(sid).then((data) => callback(null, (data ?? null) as Session | null), callback);
    },
    destroy(sid, callback) {
      sessions.destroy(sid).then(() => callback(), callback);
    },
  };
}
