import { Readable, Transform } from 'node:stream';
import { finished } from 'node:stream/promises';

import { parse, type Options, type Parser } from 'csv-parse';

import type { FieldErrors } from '../errors';

import { createDatesOfBirthGuard, MAX_DATES_OF_BIRTH } from './dates-of-birth';
import { createUtf8Check } from './utf8';

export { MAX_DATES_OF_BIRTH };

/**
 * The CSV import file format: columns, header rules, the mapping of a row to a claim input, row
 * numbers, and ONE csv-parse configuration (`createCsvParser`) that both the upload check (on the
 * file's way to storage) and the worker's row reader use, so the two can never disagree. Row
 * validation itself is the single-claim endpoint's `validateClaimInput` (its schema and rules).
 */

export const REQUIRED_COLUMNS = [
  'first_name',
  'last_name',
  'date_of_birth',
  'id_type',
  'id_number',
  'claim_date',
  'vehicle_registration',
] as const;
export const OPTIONAL_COLUMNS = ['claim_type', 'amount', 'currency', 'is_at_fault', 'status'] as const;
export type Column = (typeof REQUIRED_COLUMNS)[number] | (typeof OPTIONAL_COLUMNS)[number];
const KNOWN = new Set<string>([...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS]);

export const ALLOWED_EXTENSIONS = ['csv', 'txt'] as const;
/** How far into the file the header row must end. */
export const MAX_HEADER_BYTES = 64 * 1024;
/** A single record larger than this is a broken file (an unclosed quote swallowing the rest). */
export const MAX_RECORD_CHARS = 1024 * 1024;
/**
 * More rows than this with another number of fields than the header's make the whole file
 * invalid: that is an export with another delimiter or layout, not a few broken rows. It also
 * bounds the parser's cost, which is many times higher for such a row than for a regular one.
 */
export const MAX_FIELD_COUNT_ERRORS = 1000;
/**
 * Bytes handed to the parser at a time, so that a file found invalid stops being parsed soon and
 * other requests are answered in between.
 */
const PARSE_SLICE_BYTES = 16 * 1024;

/** One turn of the event loop: what other requests were waiting for runs first. */
export const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** How to say the nth date of birth in the message. */
const ORDINAL: Record<number, string> = { 3: 'fourth' };

/**
 * The dates of birth each document of a file is given, row by row (src/domain/imports/dates-of-birth.ts,
 * in memory that does not grow with the file): `see` throws InvalidImportFile at a row giving a
 * document its fourth, when the first documents of the file are concerned; `finish` finds any
 * other such row once the file has been read.
 */
function datesOfBirthGuard(columns: readonly string[]) {
  const type = columns.indexOf('id_type');
  const number = columns.indexOf('id_number');
  const dob = columns.indexOf('date_of_birth');
  const guard = createDatesOfBirthGuard();
  const see = (record: string[], row: number) => {
    if (type === -1 || number === -1 || dob === -1) return;
    const date = record[dob]?.trim();
    const rawNumber = record[number];
    if (!rawNumber || !date) return;
    const bad = guard.see(record[type] ?? '', rawNumber, date, row);
    if (bad !== undefined) throw new InvalidImportFile([fileMessages.datesOfBirth(bad)]);
  };
  /**
   * The same for a line of `bytes` without quotes, its cells ending at `ends` (the delimiters, then
   * the line's end); `ascii` when the line is known to have only ASCII bytes.
   */
  const seeLine = (bytes: Buffer, start: number, ends: Int32Array, ascii: boolean, row: number) => {
    if (type === -1 || number === -1 || dob === -1) return;
    const bad = guard.seeBytes(
      bytes,
      type === 0 ? start : ends[type - 1]! + 1,
      ends[type]!,
      number === 0 ? start : ends[number - 1]! + 1,
      ends[number]!,
      dob === 0 ? start : ends[dob - 1]! + 1,
      ends[dob]!,
      ascii,
      row,
    );
    if (bad !== undefined) throw new InvalidImportFile([fileMessages.datesOfBirth(bad)]);
  };
  const finish = async () => {
    const bad = await guard.finish(yieldToEventLoop);
    if (bad !== undefined) throw new InvalidImportFile([fileMessages.datesOfBirth(bad)]);
  };
  return { see, seeLine, finish, discard: () => guard.discard() };
}

/** The file as a whole is unacceptable: answered as 422 with the message on `file`. */
export class InvalidImportFile extends Error {
  constructor(readonly messages: string[]) {
    super(messages[0]);
    this.name = 'InvalidImportFile';
  }
  get fields(): FieldErrors {
    return { file: this.messages };
  }
}

export const fileMessages = {
  required: 'The file field is required.',
  extension: `The file must be a file of type: ${ALLOWED_EXTENSIONS.join(', ')}.`,
  empty: 'The file is empty.',
  tooLarge: (maxBytes: number) => `The file must not be greater than ${Math.floor(maxBytes / 1024)} kilobytes (${maxBytes} bytes).`,
  binary: 'The file must be a CSV text file; it looks like a binary file (save a spreadsheet as CSV first).',
  notUtf8: 'The file must be UTF-8 text.',
  notGzip: (name: string) => `The file ${name} starts as a gzip file but is not a valid one (damaged or cut short); nothing was stored.`,
  gzipBomb: (name: string, ratio: number) =>
    `The file ${name} expands more than ${ratio} times when decompressed, past its first megabyte: it was refused as a decompression bomb; nothing was stored.`,
  blankHeader: 'The first row must be the header row; it is blank.',
  headerTooLong: `The header row must end within the first ${MAX_HEADER_BYTES / 1024} KB of the file.`,
  missing: (cols: string[]) => `The header row is missing the required column${cols.length > 1 ? 's' : ''}: ${cols.join(', ')}.`,
  unknown: (cols: string[]) => `The header row has unknown column${cols.length > 1 ? 's' : ''}: ${cols.join(', ')}.`,
  duplicate: (cols: string[]) =>
    `The header row names ${cols.length > 1 ? 'these columns' : 'a column'} more than once: ${cols.join(', ')}.`,
  unclosedQuote: (row: number) => `Row ${row} has a quoted field that is never closed; the file is not valid CSV.`,
  recordTooLarge: (row: number) => `Row ${row} is larger than ${MAX_RECORD_CHARS / 1024 / 1024} MB; the file is not valid CSV.`,
  datesOfBirth: (row: number) =>
    `Row ${row} gives a document a ${ORDINAL[MAX_DATES_OF_BIRTH]} date of birth: a file in which one document appears with more than ${MAX_DATES_OF_BIRTH} dates of birth is refused whole (it would find out a person's date of birth).`,
  fieldCounts: (row: number, got: number, want: number) =>
    `More than ${MAX_FIELD_COUNT_ERRORS.toLocaleString('en')} rows have another number of fields than the header (row ${row} has ${got}; the header has ${want}): check the file's delimiter and layout.`,
} as const;

export const rowMessages = {
  fieldCount: (got: number, want: number) => `The row has ${got} field${got === 1 ? '' : 's'}; the header has ${want}.`,
} as const;

/**
 * The file name's extension is checked before any byte is read. A gzip-compressed file may add
 * `.gz` (`claims.csv.gz`, or `claims.gz`); compression itself is recognised by the bytes
 * (src/domain/uploads/upload.ts), whatever the name.
 */
export function checkFileName(fileName: string | undefined): string | undefined {
  if (/\.gz$/iu.test(fileName ?? '') && !/\.[A-Za-z0-9]+\.gz$/iu.test(fileName ?? '')) return undefined;
  const ext = /\.([A-Za-z0-9]+)(?:\.gz)?$/iu.exec(fileName ?? '')?.[1]?.toLowerCase();
  return ext && (ALLOWED_EXTENSIONS as readonly string[]).includes(ext) ? undefined : fileMessages.extension;
}

/** For display only: no path, no control characters, bounded length. */
export function sanitizeFileName(fileName: string | undefined): string {
  const base = (fileName ?? '').split(/[\\/]/u).pop() ?? '';

  const clean = base
    // eslint-disable-next-line no-control-regex -- control characters are what is replaced here
    .replace(/[\u0000-\u001f\u007f"<>|:*?]/gu, '_')
    .trim()
    .slice(0, 255);
  return clean === '' ? 'upload.csv' : clean;
}

export type Delimiter = ',' | ';' | '\t';

/** The delimiter is whichever of comma, semicolon and tab the header line uses most (comma when none). */
export function detectDelimiter(headerLine: string): Delimiter {
  let best: Delimiter = ',';
  let bestCount = 0;
  for (const d of [',', ';', '\t'] as const) {
    const count = headerLine.split(d).length - 1;
    if (count > bestCount) [best, bestCount] = [d, count];
  }
  return best;
}

/** Header names must match exactly (case-sensitive, no trimming); column order is free. */
export function checkHeader(names: string[]): string[] {
  const problems: string[] = [];
  // Sets, not indexOf: a header may have tens of thousands of names.
  const present = new Set(names);
  const missing = REQUIRED_COLUMNS.filter((c) => !present.has(c));
  const unknownNames = [...new Set(names.filter((n) => !KNOWN.has(n)))];
  const unknown = unknownNames.slice(0, 20).map((n) => (n === '' ? '(empty)' : JSON.stringify(n).slice(1, -1)));
  if (unknownNames.length > 20) unknown.push(`… (${unknownNames.length} in all)`);
  const seen = new Set<string>();
  const duplicate = [...new Set(names.filter((n) => KNOWN.has(n) && (seen.has(n) || !seen.add(n))))];
  if (missing.length > 0) problems.push(fileMessages.missing(missing));
  if (unknown.length > 0) problems.push(fileMessages.unknown(unknown.map((u) => (u.length > 60 ? `${u.slice(0, 60)}…` : u))));
  if (duplicate.length > 0) problems.push(fileMessages.duplicate(duplicate));
  return problems;
}

/**
 * The one csv-parse configuration of the import: RFC 4180 quotes, CRLF, LF or CR line ends, a BOM
 * allowed. Empty lines are skipped by the parser itself (a file of blank lines costs what its
 * bytes cost); each record comes with `info`, whose counts give its row number.
 */
export function csvOptions(delimiter: Delimiter): Options {
  return {
    bom: true,
    delimiter,
    record_delimiter: ['\r\n', '\n', '\r'],
    relax_quotes: true,
    relax_column_count: true,
    skip_empty_lines: true,
    info: true,
    max_record_size: MAX_RECORD_CHARS,
  };
}
export const createCsvParser = (delimiter: Delimiter): Parser => parse(csvOptions(delimiter));

/** A parsed record with the counts csv-parse keeps (`info: true`). */
type ParsedRecord = { record: string[]; info: { records: number; empty_lines: number } };
/** The row number a spreadsheet shows: records so far, this one included, plus the skipped empty lines. */
const rowOf = (info: ParsedRecord['info']) => info.records + info.empty_lines;

/** Counts rows whose number of fields is not the header's; past MAX_FIELD_COUNT_ERRORS the file is invalid. */
function fieldCountGuard() {
  let count = 0;
  return (row: number, got: number, want: number) => {
    if (++count > MAX_FIELD_COUNT_ERRORS) throw new InvalidImportFile([fileMessages.fieldCounts(row, got, want)]);
  };
}

export type Header = { delimiter: Delimiter; columns: Column[] };

/** The header record (record 1 of the parser) checked: its names, or InvalidImportFile. */
export function checkHeaderRecord(names: string[]): Column[] {
  const problems = checkHeader(names);
  if (problems.length > 0) throw new InvalidImportFile(problems);
  return names as Column[];
}

/** A parser error as the file's problem; `row` is the record being read (header = 1). */
function fileError(err: Error, row: number): Error {
  const code = (err as { code?: string }).code;
  if (code === 'CSV_QUOTE_NOT_CLOSED') return new InvalidImportFile([fileMessages.unclosedQuote(row)]);
  if (code === 'CSV_MAX_RECORD_SIZE') return new InvalidImportFile([fileMessages.recordTooLarge(row)]);
  return err;
}

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
/** Lines longer than this go to the parser (which also bounds a record at MAX_RECORD_CHARS). */
const FAST_LINE_BYTES = 64 * 1024;
/** Bytes the line reader reads between two turns of the event loop. */
const FAST_SLICE_BYTES = 32 * 1024;

/**
 * The delimiter, from the first line of the file's first bytes: undefined while more bytes are
 * needed, InvalidImportFile for a file with no usable header line.
 */
function sniffDelimiter(head: Buffer, final: boolean): Delimiter | undefined {
  let end = head.indexOf(LF);
  const cr = head.indexOf(CR);
  if (cr !== -1 && (end === -1 || cr < end)) end = cr;
  if (end === -1) {
    if (head.length > MAX_HEADER_BYTES) throw new InvalidImportFile([fileMessages.headerTooLong]);
    if (!final) return undefined;
    end = head.length;
  }
  if (end > MAX_HEADER_BYTES) throw new InvalidImportFile([fileMessages.headerTooLong]);
  const bom = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0;
  const line = head.subarray(bom, end).toString('utf8');
  if (line.trim() === '') {
    // Only white space so far: an empty file if it stays so, else a blank first row.
    const allBlank = head.subarray(bom).toString('utf8').trim() === '';
    if (allBlank && final) throw new InvalidImportFile([fileMessages.empty]);
    if (allBlank && head.length <= MAX_HEADER_BYTES) return undefined;
    throw new InvalidImportFile([fileMessages.blankHeader]);
  }
  return detectDelimiter(line);
}

/** What the upload inspection learnt about a valid file. */
export type InspectedFile = { dataRows: number; header: Header | undefined };

const blank = (cell: string | undefined) => cell === undefined || cell.trim() === '';

/**
 * A pass-through stream that rejects an unacceptable file on its way to storage, as early as the
 * bytes show it: binary content (NUL bytes), text that is not UTF-8, a header row that does not
 * match, a quote that is never closed, too many rows with another number of fields, a document
 * with too many dates of birth. It also counts the data rows (the progress total). Nothing is kept
 * beyond the current line and the dates-of-birth guard's bounded memory. The upload
 * (src/domain/uploads/upload.ts) limits, counts and hashes the bytes before they reach it.
 *
 * Two readers, one result. While no quote character has appeared and every line is shorter than
 * FAST_LINE_BYTES, the file is read line by line (`scanLines`): without quotes a csv-parse
 * record is exactly a line split on the delimiter (CRLF, LF or CR ends it; an empty line is
 * skipped and counted), and this costs a fraction of the parser's time per byte. From the first
 * line with a quote (or a longer line) to the end, the bytes go through the import's csv-parse
 * parser (`createCsvParser`, which the worker's reader uses too), started at that line, its row
 * numbers continuing the lines read so far. The line reader makes no string of a line: it finds
 * the delimiters in the line's bytes and hands the dates-of-birth guard the byte ranges of the
 * row's document and date (`seeBytes`, which keys them as the strings would be keyed), and the
 * UTF-8 check validates the bytes without decoding them (src/domain/imports/utf8.ts).
 */
export function createFileInspector(): Transform & { result(): InspectedFile } {
  const utf8 = createUtf8Check();
  let size = 0;
  let head: Buffer[] = [];
  let delimiter: Delimiter | undefined;
  /** The line reader's unfinished last line; undefined once the parser reads the rest. */
  let carry: Buffer | undefined = Buffer.alloc(0);
  let atFileStart = true;
  let parser: Parser | undefined;
  let header: Header | undefined;
  /** Records (the header included) and skipped empty lines so far: a record's row is their sum. */
  let records = 0;
  let emptyLines = 0;
  let dataRows = 0;
  let failure: Error | undefined;
  const fieldCount = fieldCountGuard();
  let datesOfBirth: ReturnType<typeof datesOfBirthGuard> | undefined;

  /** One record, whichever reader found it. Throws InvalidImportFile. */
  const onRecord = (record: string[], row: number) => {
    records++;
    if (records === 1) {
      header = { delimiter: delimiter!, columns: checkHeaderRecord(record) };
      datesOfBirth = datesOfBirthGuard(header.columns);
    } else if (!record.every(blank)) {
      dataRows++;
      if (record.length !== header!.columns.length) fieldCount(row, record.length, header!.columns.length);
      else datesOfBirth!.see(record, row);
    }
  };

  /** The parser, from here to the end of the file, its rows after those read so far. */
  const startParser = () => {
    const rowBase = records + emptyLines;
    const p = parse({ ...csvOptions(delimiter!), bom: atFileStart });
    p.on('data', ({ record, info }: ParsedRecord) => {
      if (failure) return;
      try {
        onRecord(record, rowBase + rowOf(info));
      } catch (err) {
        failure ??= err instanceof Error ? err : new Error(String(err));
      }
    });
    p.on('error', (err) => (failure ??= fileError(err, rowBase + p.info.records + p.info.empty_lines + 1)));
    parser = p;
  };
  const write = (buf: Buffer) => new Promise<void>((resolve) => void parser!.write(buf, () => resolve()));
  /**
   * Hands the bytes to the parser a slice at a time, and stops as soon as the file is found
   * invalid. After each slice the event loop takes a turn: the parser's callbacks do not give it
   * one, and the socket hands over the upload in blocks of many slices, so the server's other
   * requests would otherwise wait for whole blocks to be parsed.
   */
  const feed = async (buf: Buffer) => {
    for (let at = 0; at < buf.length && !failure; at += PARSE_SLICE_BYTES) {
      await write(buf.subarray(at, at + PARSE_SLICE_BYTES));
      await yieldToEventLoop();
    }
  };

  /**
   * Reads whole lines of `bytes` (after the carried part line) while they have no quote; returns
   * what is left for the parser (from the start of the first line with a quote or too long a
   * line), or undefined when every line was read (the unfinished last one carried).
   */
  /** Where each cell of the line being read ends (its delimiter, or the line's end). */
  let ends = new Int32Array(0);
  const scanLines = (bytes: Buffer, final: boolean): Buffer | undefined => {
    let data = carry!.length > 0 ? Buffer.concat([carry!, bytes]) : bytes;
    if (atFileStart && data.length >= 3 && data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf) {
      data = data.subarray(3);
      atFileStart = false;
    }
    const quote = data.indexOf(QUOTE);
    const end = quote === -1 ? data.length : quote;
    const d = delimiter!;
    const dByte = d.charCodeAt(0);
    let pos = 0;
    let lf = data.indexOf(LF);
    let cr = data.indexOf(CR);
    for (;;) {
      if (lf !== -1 && lf < pos) lf = data.indexOf(LF, pos);
      if (cr !== -1 && cr < pos) cr = data.indexOf(CR, pos);
      let eol = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      // A quote in this line (or a line too long to be sure of): the parser reads from here.
      if ((eol === -1 ? data.length : eol) >= end && quote !== -1) break;
      if (eol === -1 || (eol === data.length - 1 && data[eol] === CR && !final)) {
        if (!final) {
          if (data.length - pos > FAST_LINE_BYTES) break;
          carry = Buffer.from(data.subarray(pos));
          return undefined;
        }
        if (pos === data.length) {
          carry = Buffer.alloc(0);
          return undefined;
        }
        eol = data.length;
      }
      if (eol - pos > FAST_LINE_BYTES) break;
      atFileStart = false;
      if (eol === pos) emptyLines++;
      else {
        let cells: string[] | undefined;
        if (records === 0) cells = data.toString('utf8', pos, eol).split(d);
        else {
          // Most lines start with a cell that is not blank and have the header's number of
          // fields: their row is counted and only the cells of their document are made.
          const width = header!.columns.length;
          if (ends.length !== width) ends = new Int32Array(width);
          let fields = 1;
          /** The line's bytes or'ed: under 0x80 when the line is ASCII. */
          let bits = 0;
          // A loop over the line's bytes: a call of indexOf per delimiter costs more than it.
          for (let at = pos; at < eol; at++) {
            const c = data[at]!;
            bits |= c;
            if (c !== dByte) continue;
            if (fields < width) ends[fields - 1] = at;
            fields++;
          }
          let mayBeBlank = true;
          for (let at = pos; at < eol; at++) {
            const c = data[at]!;
            if (c === dByte || c === 0x20 || c === 0x09 || c === 0x0b || c === 0x0c) continue;
            mayBeBlank = c >= 0x80;
            break;
          }
          if (mayBeBlank) cells = data.toString('utf8', pos, eol).split(d);
          else {
            records++;
            dataRows++;
            const row = records + emptyLines;
            if (fields !== width) fieldCount(row, fields, width);
            else {
              ends[width - 1] = eol;
              datesOfBirth!.seeLine(data, pos, ends, bits < 0x80, row);
            }
          }
        }
        if (cells) onRecord(cells, records + 1 + emptyLines);
      }
      pos = eol >= data.length ? data.length : data[eol] === CR && data[eol + 1] === LF ? eol + 2 : eol + 1;
      if (pos >= data.length) {
        carry = Buffer.alloc(0);
        return undefined;
      }
    }
    carry = undefined;
    return data.subarray(pos);
  };

  /** Reads the bytes with whichever reader is at work; throws the file's problem. */
  const read = async (bytes: Buffer, final: boolean) => {
    if (carry !== undefined) {
      for (let at = 0; at < bytes.length || (final && at === 0); at += FAST_SLICE_BYTES) {
        const last = at + FAST_SLICE_BYTES >= bytes.length;
        const rest = scanLines(bytes.subarray(at, at + FAST_SLICE_BYTES), final && last);
        if (rest !== undefined) {
          startParser();
          await feed(Buffer.concat([rest, bytes.subarray(at + FAST_SLICE_BYTES)]));
          break;
        }
        await yieldToEventLoop();
      }
    } else await feed(bytes);
    if (failure) throw failure;
  };

  const inspector = new Transform({
    transform(chunk: Buffer, _enc, done) {
      (async () => {
        size += chunk.length;
        if (chunk.indexOf(0) !== -1) throw new InvalidImportFile([fileMessages.binary]);
        if (!utf8.chunk(chunk)) throw new InvalidImportFile([fileMessages.notUtf8]);
        let bytes = chunk;
        if (!delimiter) {
          head.push(chunk);
          bytes = Buffer.concat(head);
          head = [bytes];
          delimiter = sniffDelimiter(bytes, false);
          if (delimiter === undefined) return;
          head = [];
        }
        await read(bytes, false);
      })().then(
        () => done(null, chunk),
        (err: Error) => done(err),
      );
    },
    flush(done) {
      (async () => {
        if (!utf8.end()) throw new InvalidImportFile([fileMessages.notUtf8]);
        if (size === 0) throw new InvalidImportFile([fileMessages.empty]);
        if (!delimiter) {
          const bytes = Buffer.concat(head);
          delimiter = sniffDelimiter(bytes, true)!;
          await read(bytes, true);
        } else if (carry !== undefined) await read(Buffer.alloc(0), true);
        if (parser) {
          parser.end();
          await finished(parser).catch(() => {});
        }
        if (failure) throw failure;
        await datesOfBirth?.finish();
      })().then(
        () => done(),
        (err: Error) => done(err),
      );
    },
    destroy(err, done) {
      datesOfBirth?.discard();
      done(err);
    },
  }) as Transform & { result(): InspectedFile };
  inspector.result = () => ({ dataRows, header });
  return inspector;
}

/** A data row: the claim body (POST /claims shape), or errors that need no validation to find. */
export type ImportRow =
  { row: number; body: Record<string, unknown>; cells: string[] } | { row: number; errors: FieldErrors; cells: string[] };

/** true/false/1/0 in any case; anything else stays a string so the validator reports it. */
function toBoolean(cell: string | undefined): unknown {
  if (blank(cell)) return undefined;
  const v = cell!.toLowerCase();
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  return cell;
}

/**
 * One record as the JSON body of POST /claims, checked by the same compiled schema and rules
 * (validateClaimInput); empty cells are "not given". The one place a column meets its field.
 */
export function toClaimBody(record: string[], columns: Column[]): Record<string, unknown> {
  const cell: Partial<Record<Column, string>> = {};
  columns.forEach((c, i) => {
    const v = record[i];
    if (!blank(v)) cell[c] = v;
  });
  return {
    client: {
      first_name: cell.first_name,
      last_name: cell.last_name,
      date_of_birth: cell.date_of_birth,
      id_documents: [{ type: cell.id_type, number: cell.id_number }],
    },
    claim_date: cell.claim_date,
    vehicle_registration: cell.vehicle_registration,
    claim_type: cell.claim_type,
    amount: cell.amount,
    currency: cell.currency,
    is_at_fault: toBoolean(cell.is_at_fault),
    status: cell.status,
  };
}

/**
 * The column each field path of the body comes from, read off toClaimBody itself (a row whose
 * cells are its column names), so the mapping is written once. The document list and the document
 * as a whole are named by the document's number.
 */
const FIELD_TO_COLUMN: Record<string, string> = (() => {
  const columns: Column[] = [...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS];
  const out: Record<string, string> = { 'client.id_documents': 'id_number', 'client.id_documents.0': 'id_number' };
  const walk = (value: unknown, path: string): void => {
    if (typeof value === 'string') out[path] = value;
    else if (typeof value === 'object' && value !== null) {
      for (const [key, child] of Object.entries(value)) walk(child, path === '' ? key : `${path}.${key}`);
    }
  };
  walk(toClaimBody(columns, columns), '');
  return out;
})();

/** The API's field paths (`client.id_documents.0.number`) as the CSV's column names (`id_number`). */
export function toColumnErrors(errors: FieldErrors): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [field, list] of Object.entries(errors)) {
    const column = FIELD_TO_COLUMN[field] ?? field;
    const target = (out[column] ??= []);
    for (const m of list) if (!target.includes(m)) target.push(m);
  }
  return out;
}

/** Reads up to the end of the header line, so the delimiter is known before the parser starts. */
async function peekDelimiter(source: Readable): Promise<{ delimiter: Delimiter; replay: Readable }> {
  const iterator = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const head: Buffer[] = [];
  let delimiter: Delimiter | undefined;
  for (;;) {
    const next = await iterator.next();
    if (next.done) break;
    head.push(next.value);
    const joined = Buffer.concat(head);
    head.length = 0;
    head.push(joined);
    delimiter = sniffDelimiter(joined, false);
    if (delimiter !== undefined) break;
  }
  delimiter ??= sniffDelimiter(Buffer.concat(head), true)!;
  async function* replayAll() {
    for (const chunk of head) yield chunk;
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      yield next.value;
    }
  }
  return { delimiter, replay: Readable.from(replayAll(), { objectMode: false }) };
}

/**
 * Yields the data rows of a stored import file in order, numbered as a spreadsheet shows them
 * (header = 1), through the same parser as the upload check. Blank rows are skipped but keep their
 * number; a row with the wrong number of fields is a row error. Each row keeps its cells as read.
 */
export async function* readImportRows(
  source: Readable,
  opts: { onHeader?: (columns: Column[]) => void } = {},
): AsyncGenerator<ImportRow, void, undefined> {
  const { delimiter, replay } = await peekDelimiter(source);
  const parser = replay.pipe(createCsvParser(delimiter));
  replay.on('error', (err) => parser.destroy(err));
  const fieldCount = fieldCountGuard();
  let columns: Column[] | undefined;
  try {
    for await (const { record, info } of parser as AsyncIterable<ParsedRecord>) {
      const row = rowOf(info);
      if (columns === undefined) {
        columns = checkHeaderRecord(record);
        opts.onHeader?.(columns);
        continue;
      }
      if (record.every(blank)) continue;
      if (record.length !== columns.length) {
        fieldCount(row, record.length, columns.length);
        yield { row, errors: { row: [rowMessages.fieldCount(record.length, columns.length)] }, cells: record };
        continue;
      }
      yield { row, body: toClaimBody(record, columns), cells: record };
    }
  } catch (err) {
    if (err instanceof InvalidImportFile) throw err;
    throw fileError(err instanceof Error ? err : new Error(String(err)), parser.info.records + parser.info.empty_lines + 1);
  } finally {
    parser.destroy();
    replay.destroy();
  }
}
