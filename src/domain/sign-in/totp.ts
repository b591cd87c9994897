import { createHash, randomBytes } from 'node:crypto';

import { Secret, TOTP } from 'otpauth';

/** RFC 6238 as authenticator apps expect it: SHA-1, 6 digits, 30-second steps. */
export const TOTP_PERIOD_SECONDS = 30;
export const TOTP_DIGITS = 6;
/** A code of the step before or after the current one is accepted too (clock drift), none further. */
export const TOTP_WINDOW = 1;
export const RECOVERY_CODE_COUNT = 10;

const totpOf = (base32: string, label = 'person') =>
  new TOTP({
    issuer: 'Claims Registry',
    label,
    algorithm: 'SHA1',
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_SECONDS,
    secret: Secret.fromBase32(base32),
  });

/** A new 160-bit key, as base32 (the text an app accepts when the QR code cannot be scanned). */
export const newTotpKey = (): string => new Secret({ size: 20 }).base32;

/** The otpauth:// address the QR code carries. */
export const totpUri = (base32: string, email: string): string => totpOf(base32, email).toString();

/**
 * The time step of the code if it is right for `nowMs` (one step either side), else null. The
 * caller accepts a step only if it is later than the last one accepted (no code works twice).
 */
export function totpStep(base32: string, code: string, nowMs: number): number | null {
  const token = code.replace(/\s+/gu, '');
  if (!/^\d{6}$/u.test(token)) return null;
  const delta = totpOf(base32).validate({ token, timestamp: nowMs, window: TOTP_WINDOW });
  return delta === null ? null : Math.floor(nowMs / 1000 / TOTP_PERIOD_SECONDS) + delta;
}

/** Ten recovery codes of 80 random bits each, as `xxxxx-xxxxx-xxxxx-xxxxx` (lower-case base32). */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const b32 = new Secret({ buffer: randomBytes(10).buffer }).base32.toLowerCase();
    return b32.match(/.{1,4}/gu)!.join('-');
  });
}

/** What is stored of a recovery code: a SHA-256 of it without separators or case. */
export const hashRecoveryCode = (code: string): string =>
  createHash('sha256').update(code.replace(/[\s-]/gu, '').toLowerCase(), 'utf8').digest('hex');

/** A recovery code as typed: letters and digits with optional dashes, 16 characters without them. */
export const looksLikeRecoveryCode = (code: string): boolean => /^[a-z2-7]{16}$/u.test(code.replace(/[\s-]/gu, '').toLowerCase());
