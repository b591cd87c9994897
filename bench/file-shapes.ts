/**
 * What a file's shape costs the import's two readers (npm run bench:file-shapes):
 *
 *   npm run bench:file-shapes -- [--mb 10] [--runs 3]
 *
 * Each shape is a file of about --mb megabytes made to be expensive (blank lines, rows of one
 * field, one endless line, a header of 100,000 columns, a huge quoted field), beside a regular
 * file of the same size. Each goes through the upload check (`uploadMeter`, then
 * `createFileInspector`, as the endpoint streams the upload to storage) and the worker's reader
 * (`readImportRows`), fed in 64 KB chunks as a socket or storage would. Printed per shape and reader: the verdict (accepted, or the
 * 422 message), the file's size divided by the time to that verdict (MB/s, median of --runs), and
 * the growth of the process's peak resident memory.
 */
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';

import { createFileInspector, readImportRows } from '../src/domain/imports/csv-file';
import { uploadMeter } from '../src/domain/uploads/upload';

const { values } = parseArgs({ options: { mb: { type: 'string', default: '10' }, runs: { type: 'string', default: '3' } } });
const LIMIT = 10 * 1024 * 1024;
const size = Math.round(Number(values.mb) * 1024 * 1024);
const runs = Number(values.runs);

const HEADER =
  'first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration,claim_type,amount,currency,is_at_fault,status\n';
const ROW = 'Jonas,Petraitis,1985-03-14,passport,LT-12345678,2026-06-01,ABC 123,accident,1250.50,EUR,false,filed\n';

const fill = (prefix: string, unit: string, bytes: number) =>
  prefix + unit.repeat(Math.max(0, Math.floor((bytes - prefix.length) / unit.length)));

const shapes: Record<string, () => Buffer> = {
  'regular rows': () => Buffer.from(fill(HEADER, ROW, size)),
  'blank lines': () => Buffer.from(fill(HEADER + ROW, '\n', size)),
  'blank lines, 1 byte over the limit': () => Buffer.from(fill(HEADER + ROW, '\n', LIMIT + 1)),
  'one-field rows': () => Buffer.from(fill(HEADER, 'xxxxxxxxx\n', size)),
  'one line, no end': () => Buffer.from('x'.repeat(size)),
  'header, then one long line': () => Buffer.from(fill(HEADER, 'y', size) + '\n'),
  'header of 100,000 columns': () => Buffer.from(`${Array.from({ length: 100_000 }, (_, i) => `c${i}`).join(',')}\n`),
  'header, then one quoted field': () => Buffer.from(`${fill(`${HEADER}"`, 'q', size)}"\n`),
};

function chunks(buf: Buffer): Readable {
  return Readable.from(
    (function* () {
      for (let at = 0; at < buf.length; at += 64 * 1024) yield buf.subarray(at, at + 64 * 1024);
    })(),
  );
}

async function uploadCheck(buf: Buffer): Promise<string> {
  const inspector = createFileInspector();
  await pipeline(chunks(buf), uploadMeter(LIMIT).stream, inspector, new Writable({ write: (_c, _e, cb) => cb() }));
  return `accepted, ${inspector.result().dataRows} rows`;
}

async function workerRead(buf: Buffer): Promise<string> {
  let rows = 0;
  let errors = 0;
  for await (const row of readImportRows(chunks(buf))) {
    rows++;
    if ('errors' in row) errors++;
  }
  return `read, ${rows} rows (${errors} row errors)`;
}

async function measure(read: (buf: Buffer) => Promise<string>, buf: Buffer) {
  const times: number[] = [];
  let verdict = '';
  // The process's peak resident memory (kB) only grows: its growth is what this shape added to it.
  const peakBefore = process.resourceUsage().maxRSS;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    verdict = await read(buf).catch((err: Error) => `422: ${err.message.slice(0, 70)}`);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const ms = times[Math.floor(times.length / 2)]!;
  return { verdict, mbPerS: buf.length / 1024 / 1024 / (ms / 1000), ms, rssMb: (process.resourceUsage().maxRSS - peakBefore) / 1024 };
}

console.log(`file shapes of about ${values.mb} MB, limit ${LIMIT} bytes, median of ${runs} runs`);
console.log(['shape', 'MB', 'reader', 'MB/s', 'ms', 'peak RSS +MB', 'verdict'].join('\t'));
for (const [name, make] of Object.entries(shapes)) {
  const buf = make();
  for (const [reader, read] of [
    ['upload check', uploadCheck],
    ['worker read', workerRead],
  ] as const) {
    const r = await measure(read, buf);
    console.log(
      [name, (buf.length / 1024 / 1024).toFixed(1), reader, r.mbPerS.toFixed(1), r.ms.toFixed(0), r.rssMb.toFixed(0), r.verdict].join('\t'),
    );
  }
}
