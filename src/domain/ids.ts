import { randomFillSync } from 'node:crypto';

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/iu;
export const isUuid = (value: string): boolean => UUID_PATTERN.test(value);

/** Random bytes for 256 ids, drawn at once: a draw per id showed in an import's CPU profile (docs/decisions.md#ids). */
const POOL_BYTES = 16 * 256;
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** The last id's milliseconds and its 12-bit counter (RFC 9562, 6.2 method 1): ids of one process never go backwards. */
let lastMs = -1;
let counter = 0;

/**
 * A new row id: a time-ordered UUID (version 7, RFC 9562): 48 bits of Unix milliseconds, a 12-bit
 * counter that starts at a random value below 2048 each millisecond and orders the ids of one
 * millisecond, 62 random bits. Rows written together (an import's chunk) get neighbouring ids, so
 * they land on neighbouring pages of the primary key and of the indexes that hold them, which
 * makes large writes cheaper than random ids would. Built straight into its text from a pool of
 * random bytes, with no allocation per id (why: docs/decisions.md#ids).
 */
export function newId(): string {
  if (poolAt === POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const r = poolAt;
  poolAt += 16;
  let ms = Date.now();
  if (ms > lastMs) {
    lastMs = ms;
    counter = ((pool[r]! << 8) | pool[r + 1]!) & 0x7ff;
  } else if (++counter > 0xfff) {
    // 2048 ids or more in one millisecond (or the clock went back): borrow the next millisecond.
    lastMs++;
    counter = 0;
  }
  ms = lastMs;
  const hi = Math.floor(ms / 0x10000); // the top 32 of the 48 bits
  return (
    hi.toString(16).padStart(8, '0') +
    '-' +
    (ms & 0xffff).toString(16).padStart(4, '0') +
    '-' +
    (0x7000 | counter).toString(16) +
    '-' +
    HEX[0x80 | (pool[r + 2]! & 0x3f)]! +
    HEX[pool[r + 3]!]! +
    '-' +
    HEX[pool[r + 4]!]! +
    HEX[pool[r + 5]!]! +
    HEX[pool[r + 6]!]! +
    HEX[pool[r + 7]!]! +
    HEX[pool[r + 8]!]! +
    HEX[pool[r + 9]!]!
  );
}
