import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API token values (DECISIONS, "Token format"): `csk_`, 30 random base62 characters, and a
 * 6-character base62 CRC32 checksum of those 30 (alphabet 0-9A-Za-z, most significant digit
 * first). A scanner tells a real token from noise offline; the service refuses a token whose
 * checksum fails without reading the database. Tokens of the earlier format (`csk_` and 43
 * base64url characters) keep working.
 */
export const TOKEN_PREFIX = 'csk_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
const CURRENT = /^csk_([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/u;
const LEGACY = /^csk_[A-Za-z0-9_-]{43}$/u;

/** The 6-character base62 CRC32 of `body`, most significant digit first, padded with 0. */
export function checksumOf(body: string): string {
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62]! + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** 30 base62 characters from a CSPRNG, without modulo bias (bytes of 248 and over are drawn again). */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += BASE62[b % 62]!;
      if (out.length === length) break;
    }
  }
  return out;
}

export function newTokenValue(): string {
  const body = randomBase62(RANDOM_LENGTH);
  return TOKEN_PREFIX + body + checksumOf(body);
}

/** True for a token of either format that is well formed (and, for the current one, whose checksum holds). */
export function isWellFormedToken(value: string): boolean {
  const m = CURRENT.exec(value);
  if (m) return checksumOf(m[1]!) === m[2];
  return LEGACY.test(value);
}

/** True for a string of the earlier format's shape (no checksum: only the database can tell whether it is a token). */
export const isOldFormatToken = (value: string): boolean => LEGACY.test(value);

/** For lists: the first characters, enough to recognise a token, far too few to use it. */
export const displayPrefix = (value: string): string => value.slice(0, TOKEN_PREFIX.length + 6);

/**
 * For lists: the last 4 characters (shown as `csk_…abcd`, as Stripe does), to tell which token a
 * system holds. They are the end of the checksum, derived from the random part: at most about 24
 * of its 178 bits, and never enough to use or recover the token.
 */
export const lastFour = (value: string): string => value.slice(-4);
