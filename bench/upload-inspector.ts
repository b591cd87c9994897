/**
 * The CPU time of the upload's receiving path in this process, without HTTP (issue 56):
 *
 *   npm run bench:upload-inspector -- --file claims.csv [--runs 3] [--chunk 65536]
 *
 * The file (make one with `npm run gen:csv -- --rows 2000000 --seed 56 --out claims.csv`) is
 * read into memory once, then fed in --chunk byte chunks, as a socket hands them over, through
 * (a) the inspector alone (`createFileInspector`) and (b) the meter (size, SHA-256), the inspector
 * and a write to a temporary file, as the endpoint stores an upload. Printed per stage: the
 * verdict, the CPU time of the process (user + system, `process.cpuUsage`) and the file's MB
 * divided by it, best of --runs; a shared machine's load changes the wall time much more than the
 * CPU time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';

import { createFileInspector } from '../src/domain/imports/csv-file';
import { uploadMeter } from '../src/domain/uploads/upload';

const { values } = parseArgs({
  options: { file: { type: 'string' }, runs: { type: 'string', default: '3' }, chunk: { type: 'string', default: '65536' } },
});
if (!values.file) {
  console.error('Give --file (see the comment at the top of bench/upload-inspector.ts).');
  process.exit(2);
}
const bytes = fs.readFileSync(values.file);
const chunk = Number(values.chunk);
const mb = bytes.length / 1e6;

const parts = () => {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += chunk) out.push(bytes.subarray(at, at + chunk));
  return out;
};

async function measure(name: string, run: () => Promise<string>) {
  let best = Infinity;
  let bestWall = Infinity;
  let verdict = '';
  for (let i = 0; i < Number(values.runs); i++) {
    const cpu = process.cpuUsage();
    const wall = performance.now();
    verdict = await run();
    const used = process.cpuUsage(cpu);
    best = Math.min(best, (used.user + used.system) / 1e6);
    bestWall = Math.min(bestWall, (performance.now() - wall) / 1000);
  }
  console.log(
    `${name.padEnd(34)} ${verdict.padEnd(24)} CPU ${best.toFixed(2)} s (${(mb / best).toFixed(1)} MB/CPU-s), wall ${bestWall.toFixed(2)} s`,
  );
}

const verdictOf = (err: unknown) => `refused: ${err instanceof Error ? err.message.slice(0, 60) : String(err)}`;

console.log(`${values.file}: ${mb.toFixed(1)} MB in ${chunk}-byte chunks, best of ${values.runs}`);
await measure('inspector alone', async () => {
  const inspector = createFileInspector();
  try {
    await pipeline(Readable.from(parts()), inspector, new Writable({ write: (_c, _e, cb) => cb() }));
    return `${inspector.result().dataRows} rows`;
  } catch (err) {
    return verdictOf(err);
  }
});
const target = path.join(os.tmpdir(), `claims-bench-inspector-${process.pid}.csv`);
await measure('meter + inspector + file', async () => {
  const inspector = createFileInspector();
  const meter = uploadMeter(bytes.length + 1);
  try {
    await pipeline(Readable.from(parts()), meter.stream, inspector, fs.createWriteStream(target));
    return `${inspector.result().dataRows} rows`;
  } catch (err) {
    return verdictOf(err);
  } finally {
    fs.rmSync(target, { force: true });
  }
});
