import { SESSION_MAX_AGE_MS } from './context';

/** Whether a signed-in session has ended by itself: 'idle' (no request for the idle time), 'expired' (8 hours in all), or null. */
export function sessionEnded(session: { signedInAt?: number | undefined; lastSeen?: number | undefined }, now: number, idleMs: number) {
  const signedInAt = session.signedInAt ?? 0;
  if (now - signedInAt >= SESSION_MAX_AGE_MS) return 'expired' as const;
  if (now - (session.lastSeen ?? signedInAt) >= idleMs) return 'idle' as const;
  return null;
}

/** HSTS on every answer that came over TLS: a year, this host. */
export const HSTS = 'max-age=31536000';

/** Forgets who was signed in, and what was waiting to be shown to them once (the session itself stays, for the sign-in form's CSRF secret). */
export function signOutOf(session: {
  userId?: string | undefined;
  signedInAt?: number | undefined;
  lastSeen?: number | undefined;
  oneTime?: Record<string, string> | undefined;
}) {
  delete session.oneTime;
  delete session.userId;
  delete session.signedInAt;
  delete session.lastSeen;
}
