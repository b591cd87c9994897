import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { normalizeDocumentNumber } from '../claims/claim';

/**
 * The dates of birth each document of an uploaded file is given, in memory that does not grow
 * with the file. A document seen with more than MAX_DATES_OF_BIRTH dates of birth refuses the
 * file (the caller names the row).
 *
 * - While a file has at most MEMORY_DOCUMENTS documents, they are followed in memory as they
 *   arrive: its problem is found as soon as its bytes show it (every small file).
 * - Every row with a document and a date is also written as a 16-byte entry (a 64-bit hash of the
 *   document, a 32-bit one of the date, the row), into one of PARTITIONS partitions by its hash:
 *   in memory up to SPILL_BYTES, then in blocks appended to a temporary file. At the end of a
 *   file larger than the memory part, `finish` reads each partition back (all of a document's
 *   entries are in the same one, in file order) and finds the first row that gives a document
 *   too many dates of birth, a partition at a time.
 *
 * A row read by the upload's line reader comes as byte ranges (`seeBytes`): a document and a date
 * in ASCII are keyed from the bytes, with the steps of normalizeDocumentNumber done on them, and
 * get the key their strings would get; any other byte sends the row through the strings.
 */
export const MAX_DATES_OF_BIRTH = 3;
/** Documents followed in memory as the bytes arrive (about 150 bytes each). */
const MEMORY_DOCUMENTS = 50_000;
const PARTITIONS = 256;
const ENTRY_BYTES = 16;
/** A partition's block: written to the spill file when full. */
const BLOCK_BYTES = 16 * 1024;
/** Below this much in all, the partitions stay in memory (no file). */
const SPILL_BYTES = 4 * 1024 * 1024;

/** A date as a 32-bit number: YYYYMMDD for an ISO date, else a hash of the text with the top bit set. */
function dateCode(date: string): number {
  if (date.length === 10 && date.charCodeAt(4) === 0x2d && date.charCodeAt(7) === 0x2d) {
    let n = 0;
    for (let i = 0; i < 10; i++) {
      if (i === 4 || i === 7) continue;
      const c = date.charCodeAt(i) - 0x30;
      if (c < 0 || c > 9) return textCode(date);
      n = n * 10 + c;
    }
    return n;
  }
  return textCode(date);
}
const textCode = (text: string) => (fnv(text, 0x811c9dc5) | 0x80000000) >>> 0;

/** FNV-1a (32 bits) of a string's UTF-16 code units, from `seed`. */
function fnv(text: string, seed: number): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Space as `\s` and String.prototype.trim see it, among ASCII bytes (tab, LF, VT, FF, CR, space). */
const isAsciiSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);
function isAscii(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (bytes[i]! >= 0x80) return false;
  return true;
}
const isAsciiLetter = (c: number) => (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a;

/** dateCode of the text of bytes[start, end), which are ASCII and trimmed: an ASCII byte is its one UTF-16 code unit. */
function dateCodeOfBytes(bytes: Uint8Array, start: number, end: number): number {
  if (end - start === 10 && bytes[start + 4] === 0x2d && bytes[start + 7] === 0x2d) {
    let n = 0;
    let digits = true;
    for (let i = 0; i < 10; i++) {
      if (i === 4 || i === 7) continue;
      const c = bytes[start + i]! - 0x30;
      if (c < 0 || c > 9) {
        digits = false;
        break;
      }
      n = n * 10 + c;
    }
    if (digits) return n;
  }
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return ((h >>> 0) | 0x80000000) >>> 0;
}

/**
 * A document's 64-bit hash as two 32-bit halves (FNV-1a of the type, a NUL and the normalized
 * number, twice with different seeds), written into `out`. Not a cryptographic hash: two
 * documents that collide would count their dates together, which a file could only do to itself.
 */
function documentKey(type: string, normalized: string): void {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < type.length; i++) {
    const c = type.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  a = Math.imul(a, 0x01000193);
  b = Math.imul(b, 0x01000193);
  for (let i = 0; i < normalized.length; i++) {
    const c = normalized.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  keyA = a >>> 0;
  keyB = b >>> 0;
}
/** The last document key made (documentKey's result, without an allocation per row). */
let keyA = 0;
let keyB = 0;
/** A document number's bytes without their spaces (documentKeyOfBytes), grown as needed. */
let numberBytes = new Uint8Array(256);

/**
 * documentKey(type.trim(), normalizeDocumentNumber(number)) for a type and a number given as
 * ASCII bytes, without making their strings: the same steps (spaces removed, a prefix of two or
 * three letters and a hyphen removed, upper case) on bytes, each ASCII byte being its one UTF-16
 * code unit, so that a row read either way gets the same key. false when the normalized number is
 * empty (no key made).
 */
function documentKeyOfBytes(bytes: Uint8Array, typeStart: number, typeEnd: number, numberStart: number, numberEnd: number): boolean {
  while (typeStart < typeEnd && isAsciiSpace(bytes[typeStart]!)) typeStart++;
  while (typeEnd > typeStart && isAsciiSpace(bytes[typeEnd - 1]!)) typeEnd--;
  if (numberBytes.length < numberEnd - numberStart) numberBytes = new Uint8Array(numberEnd - numberStart);
  let length = 0;
  for (let i = numberStart; i < numberEnd; i++) {
    const c = bytes[i]!;
    if (!isAsciiSpace(c)) numberBytes[length++] = c;
  }
  // ^[A-Za-z]{2,3}- (the regular expression of normalizeDocumentNumber), on the number without spaces.
  let from = 0;
  if (length >= 3 && isAsciiLetter(numberBytes[0]!) && isAsciiLetter(numberBytes[1]!)) {
    if (numberBytes[2] === 0x2d) from = 3;
    else if (length >= 4 && isAsciiLetter(numberBytes[2]!) && numberBytes[3] === 0x2d) from = 4;
  }
  if (from === length) return false;
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = typeStart; i < typeEnd; i++) {
    const c = bytes[i]!;
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  a = Math.imul(a, 0x01000193);
  b = Math.imul(b, 0x01000193);
  for (let i = from; i < length; i++) {
    let c = numberBytes[i]!;
    if (c >= 0x61 && c <= 0x7a) c -= 0x20;
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  keyA = a >>> 0;
  keyB = b >>> 0;
  return true;
}
/** 53 bits of a key (its low bits chose the partition). */
const keyNumber = (a: number, b: number) => (a >>> 11) * 2 ** 32 + b;

/** A partition's block being filled: its entries as 32-bit words (`words` views `buf`), `used` in bytes. */
type Partition = { buf: Buffer; words: Uint32Array; used: number; blocks: number[] };

/** A block's buffer, aligned for its 32-bit view (Buffer.allocUnsafe may hand out an unaligned slice of its pool). */
function newBlock(): { buf: Buffer; words: Uint32Array } {
  const words = new Uint32Array(BLOCK_BYTES / 4);
  return { buf: Buffer.from(words.buffer, 0, BLOCK_BYTES), words };
}

/**
 * The documents of one partition and the dates each was given, for `finish`: an open-addressing
 * hash table in typed arrays, kept from one partition to the next, so that reading back millions
 * of entries makes no object per entry (a Map of them left the server's heap some 80 MB of
 * garbage at the end of a 200 MB upload, docs/performance.md).
 */
function createDocumentTable() {
  let mask = -1;
  let keyA = new Uint32Array(0);
  let keyB = new Uint32Array(0);
  let dates = new Uint32Array(0);
  /** Dates held per slot; 0 = empty. */
  let counts = new Uint8Array(0);
  return {
    /** Empties the table for a partition of `entries` entries (at most that many documents). */
    reset(entries: number) {
      let size = 1024;
      while (size < entries * 2) size *= 2;
      if (size > counts.length) {
        keyA = new Uint32Array(size);
        keyB = new Uint32Array(size);
        dates = new Uint32Array(size * MAX_DATES_OF_BIRTH);
        counts = new Uint8Array(size);
      } else counts.fill(0);
      mask = counts.length - 1;
    },
    /** A document (its key's halves) given a date: true when that is one date more than MAX_DATES_OF_BIRTH allows. */
    add(a: number, b: number, date: number): boolean {
      // The partition was chosen by `a`'s low bits: `b` spreads the slots.
      let slot = b & mask;
      while (counts[slot] !== 0 && (keyA[slot] !== a || keyB[slot] !== b)) slot = (slot + 1) & mask;
      const held = counts[slot]!;
      const at = slot * MAX_DATES_OF_BIRTH;
      for (let i = 0; i < held; i++) if (dates[at + i] === date) return false;
      if (held >= MAX_DATES_OF_BIRTH) return true;
      if (held === 0) {
        keyA[slot] = a;
        keyB[slot] = b;
      }
      dates[at + held] = date;
      counts[slot] = held + 1;
      return false;
    },
  };
}

export type DatesOfBirthGuard = {
  /** A row's document (type, number as written) and date of birth; the offending row number or undefined. */
  see(type: string, number: string, date: string, row: number): number | undefined;
  /**
   * The same for cells given as ranges of `bytes` (UTF-8, no quotes): type, number and date of
   * birth as written (the date not yet trimmed; nothing is seen when it is blank or the number
   * empty). Cells with other than ASCII bytes are read as strings; `ascii` says the caller knows
   * there are none.
   */
  seeBytes(
    bytes: Buffer,
    typeStart: number,
    typeEnd: number,
    numberStart: number,
    numberEnd: number,
    dateStart: number,
    dateEnd: number,
    ascii: boolean,
    row: number,
  ): number | undefined;
  /** After the last row: the first row giving a document too many dates, if any; removes the spill file. */
  finish(yieldTurn: () => Promise<void>): Promise<number | undefined>;
  /** Removes the spill file (the upload failed). */
  discard(): void;
};

export function createDatesOfBirthGuard(): DatesOfBirthGuard {
  const seen = new Map<number, number | number[]>();
  let complete = true;
  const partitions: Partition[] = [];
  let buffered = 0;
  let spill: { fd: number; file: string; size: number } | undefined;

  const openSpill = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-dob-'));
    const file = path.join(dir, 'entries');
    spill = { fd: fs.openSync(file, 'w+', 0o600), file, size: 0 };
  };
  const writeBlock = (p: Partition) => {
    fs.writeSync(spill!.fd, p.buf, 0, p.used, spill!.size);
    p.blocks.push(spill!.size);
    spill!.size += p.used;
    buffered -= p.used;
    // The block written can be filled again.
    p.used = 0;
  };
  const append = (a: number, b: number, date: number, row: number) => {
    const index = a & (PARTITIONS - 1);
    const p = (partitions[index] ??= { ...newBlock(), used: 0, blocks: [] });
    if (p.used === BLOCK_BYTES) {
      if (spill === undefined && buffered >= SPILL_BYTES) openSpill();
      if (spill) writeBlock(p);
      else {
        // Still in memory: the full block is kept as it is.
        p.blocks.push(-partitionsKept.push(p.words));
        Object.assign(p, newBlock());
        p.used = 0;
      }
    }
    // Entries in the machine's byte order: the file is read back by this process only.
    const at = p.used >>> 2;
    p.words[at] = a;
    p.words[at + 1] = b;
    p.words[at + 2] = date;
    p.words[at + 3] = row;
    p.used += ENTRY_BYTES;
    buffered += ENTRY_BYTES;
  };
  /** Blocks kept in memory before the spill file was opened; a negative block offset is -(index + 1) here. */
  const partitionsKept: Uint32Array[] = [];

  /** The block read last from the spill file (scanned before the next is read). */
  let readBuffer: ReturnType<typeof newBlock> | undefined;
  const readBlock = (offset: number): Uint32Array => {
    if (offset < 0) return partitionsKept[-offset - 1]!;
    readBuffer ??= newBlock();
    fs.readSync(spill!.fd, readBuffer.buf, 0, BLOCK_BYTES, offset);
    return readBuffer.words;
  };

  const discard = () => {
    if (!spill) return;
    try {
      fs.closeSync(spill.fd);
    } catch {
      // already closed
    }
    fs.rmSync(path.dirname(spill.file), { recursive: true, force: true });
    spill = undefined;
  };

  /** The document of the last key made (keyA, keyB) given the date `code` at `row`. */
  const seeKey = (code: number, row: number): number | undefined => {
    append(keyA, keyB, code, row);
    if (!complete) return undefined;
    const id = keyNumber(keyA, keyB);
    const dates = seen.get(id);
    if (dates === undefined) {
      if (seen.size < MEMORY_DOCUMENTS) seen.set(id, code);
      else {
        // From here on the partitions alone tell, once the file has been read.
        complete = false;
        seen.clear();
      }
    } else if (typeof dates === 'number') {
      if (dates !== code) seen.set(id, [dates, code]);
    } else if (!dates.includes(code)) {
      if (dates.length >= MAX_DATES_OF_BIRTH) return row;
      dates.push(code);
    }
    return undefined;
  };

  const see: DatesOfBirthGuard['see'] = (type, number, date, row) => {
    const normalized = normalizeDocumentNumber(number);
    if (normalized === '') return undefined;
    documentKey(type.trim(), normalized);
    return seeKey(dateCode(date), row);
  };

  return {
    see,
    seeBytes(bytes, typeStart, typeEnd, numberStart, numberEnd, dateStart, dateEnd, ascii, row) {
      if (
        !ascii &&
        (!isAscii(bytes, typeStart, typeEnd) || !isAscii(bytes, numberStart, numberEnd) || !isAscii(bytes, dateStart, dateEnd))
      ) {
        // Other spaces and letters: the strings' own rules.
        const date = bytes.toString('utf8', dateStart, dateEnd).trim();
        const number = bytes.toString('utf8', numberStart, numberEnd);
        if (number === '' || date === '') return undefined;
        return see(bytes.toString('utf8', typeStart, typeEnd), number, date, row);
      }
      while (dateStart < dateEnd && isAsciiSpace(bytes[dateStart]!)) dateStart++;
      while (dateEnd > dateStart && isAsciiSpace(bytes[dateEnd - 1]!)) dateEnd--;
      if (numberStart === numberEnd || dateStart === dateEnd) return undefined;
      if (!documentKeyOfBytes(bytes, typeStart, typeEnd, numberStart, numberEnd)) return undefined;
      return seeKey(dateCodeOfBytes(bytes, dateStart, dateEnd), row);
    },
    async finish(yieldTurn) {
      seen.clear();
      if (complete) {
        discard();
        return undefined;
      }
      let first: number | undefined;
      try {
        // A partition at a time: its entries in file order (its blocks, then what is left in memory).
        const table = createDocumentTable();
        for (const p of partitions) {
          if (!p) continue;
          table.reset((p.blocks.length * BLOCK_BYTES + p.used) / ENTRY_BYTES);
          const scan = (words: Uint32Array, used: number) => {
            for (let at = 0; at < used >>> 2; at += ENTRY_BYTES / 4) {
              const row = words[at + 3]!;
              if (first !== undefined && row >= first) return;
              if (table.add(words[at]!, words[at + 1]!, words[at + 2]!)) {
                first = row;
                return;
              }
            }
          };
          for (const offset of p.blocks) scan(readBlock(offset), BLOCK_BYTES);
          scan(p.words, p.used);
          await yieldTurn();
        }
      } finally {
        discard();
        partitionsKept.length = 0;
      }
      return first;
    },
    discard,
  };
}
