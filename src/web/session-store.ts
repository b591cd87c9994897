import type { SessionStore } from '@fastify/session';
import type { Session } from 'fastify';

import type { SessionService } from '../domain/dashboard/session-service';
import { SESSION_MAX_AGE_MS } from './context';

/**
 * @fastify/session's store interface over the database-backed session service. A signed-in
 * session's row expires when it would end by itself (idle or 8 hours), whichever is first.
 */
export function createSessionStore(sessions: SessionService, idleMs: number): SessionStore {
  return {
    set(sid, session, callback) {
      const s = session as Session & { userId?: string };
      const cookieEnd = s.cookie.expires instanceof Date ? s.cookie.expires.getTime() : Date.now() + (s.cookie.originalMaxAge ?? 0);
      const ends = [cookieEnd];
      if (s.userId && s.signedInAt) ends.push(s.signedInAt + SESSION_MAX_AGE_MS, (s.lastSeen ?? s.signedInAt) + idleMs);
      // At least a minute ahead: the idle rule itself is checked on every request (index.ts).
      const expires = new Date(Math.max(Math.min(...ends), Date.now() + 60_000));
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
