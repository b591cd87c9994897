import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));

// scrypt is memory-hard: N=2^15, r=8 uses 32 MiB per hash (OWASP's recommended minimum is N=2^17 at r=8
// with 128 MiB; the default stays at 32 MiB so a burst of sign-ins cannot exhaust a 2-core box, and
// sign-in is rate-limited). The cost (log2 N) comes from PASSWORD_HASH_COST, whose floor is 15.
const R = 8;
const P = 1;
const KEYLEN = 32;
/** scrypt needs 128·N·r bytes; allow twice that. */
const maxmemFor = (n: number) => 256 * n * R;

/** Returns `scrypt$N$r$p$salt$hash` (base64url parts), with N = 2^cost. */
export async function hashPassword(password: string, cost: number): Promise<string> {
  const n = 2 ** cost;
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { N: n, r: R, p: P, maxmem: maxmemFor(n) });
  return ['scrypt', n, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Whether a stored value is a password hash (not a marker such as "no password": reset under way, SSO). */
export const isPasswordHash = (stored: string): boolean => stored.startsWith('scrypt$') && stored.split('$').length === 6;

/** Checks a password against a stored hash, with the cost the hash was made with. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: maxmemFor(Number(n)) * (Number(r) / R),
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A readable random password for a first sign-in (about 120 bits). */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}
