import { isUtf8 } from 'node:buffer';

/**
 * Whether a stream of bytes is UTF-8, chunk by chunk, with the verdicts of a fatal streaming
 * TextDecoder (`new TextDecoder('utf-8', { fatal: true })`, WHATWG): a chunk is refused as soon
 * as one of its bytes cannot be UTF-8 whatever follows, and the end is refused in the middle of a
 * character. Unlike the decoder it makes no string of the text: `isUtf8` validates the chunk up
 * to its last whole character, and the part of a character at its end is kept for the next one.
 */
export function createUtf8Check(): { chunk(bytes: Buffer): boolean; end(): boolean } {
  /** The first bytes of a character cut at the end of the last chunk (at most 3), when they can still be one. */
  let pending: Buffer | undefined;

  return {
    chunk(bytes) {
      if (pending) {
        const need = sequenceLength(pending[0]!);
        const take = Math.min(need - pending.length, bytes.length);
        const joined = Buffer.concat([pending, bytes.subarray(0, take)]);
        pending = undefined;
        if (joined.length < need) {
          if (!canStart(joined, need)) return false;
          pending = joined;
          return true;
        }
        if (!isUtf8(joined)) return false;
        bytes = bytes.subarray(take);
      }
      // The last byte that is not a continuation byte (10xxxxxx), among the last four.
      let lead = -1;
      for (let k = 1; k <= 4 && k <= bytes.length; k++) {
        if ((bytes[bytes.length - k]! & 0xc0) !== 0x80) {
          lead = bytes.length - k;
          break;
        }
      }
      let whole = bytes.length;
      if (lead !== -1) {
        const need = sequenceLength(bytes[lead]!);
        if (bytes.length - lead < need) {
          const tail = bytes.subarray(lead);
          if (!canStart(tail, need)) return false;
          pending = Buffer.from(tail);
          whole = lead;
        }
      }
      return isUtf8(bytes.subarray(0, whole));
    },
    end() {
      return pending === undefined;
    },
  };
}

/** The bytes of a character from its first byte (1 for one that cannot start a character: validation refuses it). */
function sequenceLength(first: number): number {
  if (first >= 0xf0) return first <= 0xf4 ? 4 : 1;
  if (first >= 0xe0) return 3;
  if (first >= 0xc2) return 2;
  return 1;
}

/**
 * Whether the `need`-byte character can begin with `part` (shorter than it): some continuation
 * makes it valid UTF-8. The second byte's range depends on the first (E0: A0–BF, ED: 80–9F, F0:
 * 90–BF, F4: 80–8F, else 80–BF); one of 80, 90 and A0 is in each; later bytes may be any of 80–BF.
 */
function canStart(part: Buffer, need: number): boolean {
  const candidate = Buffer.alloc(need, 0x80);
  part.copy(candidate);
  if (part.length >= 2) return isUtf8(candidate);
  for (const second of [0x80, 0x90, 0xa0]) {
    candidate[1] = second;
    if (isUtf8(candidate)) return true;
  }
  return false;
}
