/**
 * Realistic CSV import files, streamed (any size, constant memory):
 *
 *   npm run gen:csv -- --rows 90000 [--repeat 0.3] [--invalid 0.05] [--out file.csv]
 *                      [--delimiter ,|;|tab] [--seed N] [--mismatch N]
 *
 * --repeat   share of rows whose person appeared earlier in the file (same date of birth and
 *            document; every tenth of them with a second document type, which joins the record)
 * --invalid  share of rows with one deliberate error (future date, bad date, unknown document
 *            type, negative amount, bad is_at_fault, missing name, plate too long, wrong field count)
 * --mismatch that many rows, spread evenly, showing an earlier person's document with another date
 *            of birth (an identity mismatch: the row fails and is logged as an identity check);
 *            the other rows are the same as without it
 * --seed     makes the file reproducible; without it document numbers carry a random tag, so
 *            files generated at different times never share persons.
 * Without --out the file goes to stdout. A summary goes to stderr.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export type GenOptions = {
  rows: number;
  repeat: number;
  invalid: number;
  delimiter: string;
  seed?: number | undefined;
  mismatch?: number | undefined;
};
export type GenStats = { rows: number; invalidRows: number; repeatRows: number; mismatchRows: number; bytes: number };

const FIRST = [
  'Ona',
  'Jonas',
  'Marija',
  'Petras',
  'Eglė',
  'Tomas',
  'Rūta',
  'Lukas',
  'Anna',
  'Jan',
  'Sofia',
  'Mateusz',
  'Laura',
  'Kārlis',
  'Emma',
  'Noah',
  'Maria',
  'Jüri',
  'Ieva',
  'Andrius',
];
const LAST = [
  'Petraitė',
  'Kazlauskas',
  'Jankauskienė',
  'Nowak',
  'Kowalski',
  'Bērziņš',
  'Tamm',
  'Müller',
  'Schmidt',
  'Vasiliauskas',
  'Žukauskas',
  'Ozoliņa',
  'Saar',
  'Wiśniewska',
  'Lindqvist',
  "O'Brien",
  'Rossi',
  'García',
  'Dubois',
  'Novák',
];
const DOC_TYPES = ['passport', 'national_id', 'alien_registration'] as const;
const COUNTRIES = ['LT', 'LV', 'EE', 'PL', 'DE', 'FI'];
const CLAIM_TYPES = ['accident', 'theft', 'other', ''];
const STATUSES = ['filed', 'filed', 'filed', 'under_investigation', 'settled', 'closed', ''];
const HEADER = [
  'first_name',
  'last_name',
  'date_of_birth',
  'id_type',
  'id_number',
  'claim_date',
  'vehicle_registration',
  'claim_type',
  'amount',
  'currency',
  'is_at_fault',
  'status',
];

/** mulberry32: a small seeded generator, so a seed reproduces a file exactly. */
export function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const iso = (d: Date) => d.toISOString().slice(0, 10);
const daysAgo = (n: number) => iso(new Date(Date.now() - n * 86_400_000));

type Person = { first: string; last: string; dob: string; type: string; number: string };

/** Writes the file through `write`, which may return a promise (backpressure). */
export async function generateCsv(opts: GenOptions, write: (chunk: string) => unknown): Promise<GenStats> {
  const rnd = prng(opts.seed ?? randomBytes(4).readUInt32LE(0));
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const tag = opts.seed === undefined ? randomBytes(3).toString('hex').toUpperCase() : `S${opts.seed.toString(36).toUpperCase()}`;
  const d = opts.delimiter;
  const quote = (v: string) => (v.includes(d) || v.includes('"') || v.includes('\n') ? `"${v.replace(/"/gu, '""')}"` : v);
  const pool: Person[] = [];
  const stats: GenStats = { rows: 0, invalidRows: 0, repeatRows: 0, mismatchRows: 0, bytes: 0 };
  const mismatchEvery = opts.mismatch ? Math.max(2, Math.floor(opts.rows / opts.mismatch)) : 0;
  let buffer = HEADER.join(d) + '\n';
  let nextPerson = 0;

  for (let i = 0; i < opts.rows; i++) {
    let person: Person;
    let type: string;
    let number: string;
    if (pool.length > 0 && rnd() < opts.repeat) {
      person = pick(pool);
      stats.repeatRows++;
      // Now and then the same person shows another document, which is added to their record.
      const other = rnd() < 0.1 ? DOC_TYPES.find((t) => t !== person.type)! : undefined;
      type = other ?? person.type;
      number = other ? `${person.number}X` : person.number;
    } else {
      const n = nextPerson++;
      const dob = new Date(Date.UTC(1940 + Math.floor(rnd() * 65), Math.floor(rnd() * 12), 1 + Math.floor(rnd() * 28)));
      person = {
        first: pick(FIRST),
        last: pick(LAST),
        dob: iso(dob),
        type: pick(DOC_TYPES),
        number: `${pick(COUNTRIES)}-${tag}${String(n).padStart(8, '0')}`,
      };
      if (pool.length < 20_000) pool.push(person);
      else pool[Math.floor(rnd() * pool.length)] = person;
      type = person.type;
      number = person.number;
    }
    const row: Record<string, string> = {
      first_name: person.first,
      last_name: person.last,
      date_of_birth: person.dob,
      id_type: type,
      id_number: number,
      claim_date: daysAgo(1 + Math.floor(rnd() * 1000)),
      vehicle_registration: `${String.fromCharCode(65 + Math.floor(rnd() * 26))}${String.fromCharCode(65 + Math.floor(rnd() * 26))}${String.fromCharCode(65 + Math.floor(rnd() * 26))} ${100 + Math.floor(rnd() * 900)}`,
      claim_type: pick(CLAIM_TYPES),
      amount: rnd() < 0.1 ? '' : (rnd() * 20000).toFixed(2),
      currency: rnd() < 0.5 ? 'EUR' : '',
      is_at_fault: pick(['true', 'false', '1', '0', 'TRUE', '']),
      status: pick(STATUSES),
    };
    // An earlier person's document under a date of birth one year later (the rows' random draws stay as they were).
    const earlier = mismatchEvery && (i + 1) % mismatchEvery === 0 ? pool[((i + 1) / mismatchEvery - 1) % pool.length] : undefined;
    if (earlier && earlier !== person && stats.mismatchRows < (opts.mismatch ?? 0)) {
      stats.mismatchRows++;
      Object.assign(row, {
        first_name: earlier.first,
        last_name: earlier.last,
        date_of_birth: `${Number(earlier.dob.slice(0, 4)) + 1}${earlier.dob.slice(4)}`,
        id_type: earlier.type,
        id_number: earlier.number,
      });
    }
    let fields = HEADER.map((h) => quote(row[h]!));
    if (rnd() < opts.invalid) {
      stats.invalidRows++;
      switch (Math.floor(rnd() * 8)) {
        case 0:
          fields[5] = daysAgo(-30);
          break; // claim date in the future
        case 1:
          fields[2] = '1985-02-30';
          break; // not a calendar date
        case 2:
          fields[3] = 'driving_licence';
          break;
        case 3:
          fields[8] = '-10.00';
          break;
        case 4:
          fields[10] = 'maybe';
          break;
        case 5:
          fields[0] = '';
          break;
        case 6:
          fields[6] = 'ABCDEFGHIJKLMNOPQRSTUV';
          break;
        default:
          fields = fields.slice(0, 9); // wrong number of fields
      }
    }
    buffer += fields.join(d) + '\n';
    stats.rows++;
    if (buffer.length > 64 * 1024) {
      stats.bytes += Buffer.byteLength(buffer);
      await write(buffer);
      buffer = '';
    }
  }
  stats.bytes += Buffer.byteLength(buffer);
  await write(buffer);
  return stats;
}

/** Generates straight into a file. */
export async function generateCsvFile(path: string, opts: GenOptions): Promise<GenStats> {
  const out = fs.createWriteStream(path);
  const stats = await generateCsv(opts, (chunk) =>
    out.write(chunk) ? undefined : new Promise<void>((resolve) => out.once('drain', () => resolve())),
  );
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  return stats;
}

async function main() {
  const { values } = parseArgs({
    options: {
      rows: { type: 'string', default: '1000' },
      repeat: { type: 'string', default: '0.3' },
      invalid: { type: 'string', default: '0' },
      out: { type: 'string' },
      delimiter: { type: 'string', default: ',' },
      seed: { type: 'string' },
      mismatch: { type: 'string', default: '0' },
    },
  });
  const opts: GenOptions = {
    rows: Number(values.rows),
    repeat: Number(values.repeat),
    invalid: Number(values.invalid),
    delimiter: values.delimiter === 'tab' ? '\t' : values.delimiter,
    seed: values.seed === undefined ? undefined : Number(values.seed),
    mismatch: Number(values.mismatch),
  };
  if (
    !Number.isInteger(opts.rows) ||
    opts.rows < 0 ||
    !(opts.repeat >= 0 && opts.repeat <= 1) ||
    !(opts.invalid >= 0 && opts.invalid <= 1) ||
    !(Number.isInteger(opts.mismatch) && opts.mismatch! >= 0 && opts.mismatch! <= opts.rows) ||
    ![',', ';', '\t'].includes(opts.delimiter)
  ) {
    console.error(
      'Usage: npm run gen:csv -- --rows N [--repeat 0..1] [--invalid 0..1] [--out file] [--delimiter ,|;|tab] [--seed N] [--mismatch N]',
    );
    process.exit(2);
  }
  const stats = values.out
    ? await generateCsvFile(values.out, opts)
    : await generateCsv(opts, (chunk) =>
        process.stdout.write(chunk) ? undefined : new Promise<void>((resolve) => process.stdout.once('drain', () => resolve())),
      );
  console.error(
    `${stats.rows} rows (${stats.repeatRows} repeat persons, ${stats.invalidRows} invalid, ${stats.mismatchRows} identity mismatches), ${(stats.bytes / 1024 / 1024).toFixed(1)} MB`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
