import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Worker } from 'node:worker_threads';

import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';

import { createFileInspector, fileMessages, InvalidImportFile } from '../../src/domain/imports/csv-file';
import {
  createUploadInspection,
  INSPECTION_WINDOW_BYTES,
  InspectionFault,
  type InspectionReply,
  type InspectionRequest,
} from '../../src/workers/upload-inspection';
import { csv, validRow } from '../import-helpers';

/**
 * The server inspects import files on a thread of its own (issue 56): the upload's bytes go on to
 * storage as they arrive, a copy to the thread, and the verdict is the inspector's, whichever
 * thread reads the file. These drive the check as src/domain/uploads/upload.ts does (a pass-through
 * stream between the request and the storage), through the real thread.
 */
const log = pino({ level: 'silent' });
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

function inspection() {
  const inspection = createUploadInspection({ nice: 0, log });
  close = () => inspection.close();
  return inspection;
}

/** A file of `rows` valid rows, as bytes. */
const file = (rows: number) => Buffer.from(csv(Array.from({ length: rows }, () => validRow())));

/**
 * Sends `bytes` through a check in chunks of `sizes` in turn (64 KiB, as a socket hands them over,
 * unless given); what came out and the rows, or the error.
 */
async function pass(check: ReturnType<ReturnType<typeof createUploadInspection>['check']>, bytes: Buffer, sizes = [64 * 1024]) {
  const out: Buffer[] = [];
  const chunks = function* () {
    for (let at = 0, i = 0; at < bytes.length; at += sizes[i++ % sizes.length]!) yield bytes.subarray(at, at + sizes[i % sizes.length]!);
  };
  await pipeline(
    Readable.from(chunks()),
    check.stream,
    new Writable({
      write(chunk: Buffer, _enc, done) {
        out.push(chunk);
        done();
      },
    }),
  );
  return { bytes: Buffer.concat(out), rows: check.dataRows() };
}

describe('the upload inspection thread', () => {
  it('passes every byte of a valid file through unchanged and counts its data rows, past the window', async () => {
    const bytes = file(50_000);
    expect(bytes.length).toBeGreaterThan(3 * INSPECTION_WINDOW_BYTES);
    const result = await pass(inspection().check(), bytes);
    expect(result.rows).toBe(50_000);
    expect(result.bytes.equals(bytes)).toBe(true);
  });

  it("reads quoted cells of many lines (the CSV parser's way) across the shared slots, in chunks of any size, as the inspector does on the server's thread", async () => {
    const rows = Array.from({ length: 25_000 }, (_, i) => validRow({ last_name: `Petraitė, "Jr" ${i}\nsecond line` }));
    const bytes = Buffer.from(csv(rows));
    expect(bytes.length).toBeGreaterThan(3 * INSPECTION_WINDOW_BYTES);
    // From a byte to more than the window, so that chunks straddle the slots and fill them all at once.
    const sizes = [1, 7, 65_536, 300_001, 1_500_000, 13, 262_144, 262_145];
    const result = await pass(inspection().check(), bytes, sizes);
    expect(result.rows).toBe(25_000);
    expect(result.bytes.equals(bytes)).toBe(true);
    // A quote never closed at the end: the same message, naming the same row, as the inspector on this thread gives.
    const bad = Buffer.concat([bytes, Buffer.from('Ona,"Petraitė\nsecond line\n')]);
    const onThisThread = await pipeline(
      Readable.from([bad]),
      createFileInspector(),
      new Writable({ write: (_c, _e, done) => done() }),
    ).catch((e: unknown) => e);
    expect(onThisThread).toBeInstanceOf(InvalidImportFile);
    const err = await pass(inspection().check(), bad, sizes).catch((e: unknown) => e);
    expect((err as InvalidImportFile).messages).toEqual((onThisThread as InvalidImportFile).messages);
  });

  it('frees a slot of the shared memory only once the next one has been read (the parser may still hold a view of its last bytes)', async () => {
    const thread = new Worker(new URL('../../src/workers/upload-inspection-entry.mjs', import.meta.url), { workerData: { nice: 0 } });
    close = () => thread.terminate().then(() => undefined);
    const replies: InspectionReply[] = [];
    const done = new Promise<void>((resolve) =>
      thread.on('message', (msg: InspectionReply) => {
        replies.push(msg);
        if (!('freed' in msg)) resolve();
      }),
    );
    const slotBytes = 1024;
    const memory = new SharedArrayBuffer(4 * slotBytes);
    const bytes = file(20);
    const send = (msg: InspectionRequest) => thread.postMessage(msg);
    send({ op: 'open', id: 7, memory, slotBytes });
    for (let at = 0, slot = 0; at < bytes.length; at += slotBytes, slot++) {
      const n = bytes.copy(Buffer.from(memory, slot * slotBytes, slotBytes), 0, at, at + slotBytes);
      send({ op: 'chunk', id: 7, slot, length: n });
    }
    send({ op: 'end', id: 7 });
    await done;
    const slots = Math.ceil(bytes.length / slotBytes);
    expect(slots).toBeGreaterThanOrEqual(2);
    expect(slots).toBeLessThanOrEqual(4);
    // Each slot freed once the one after it was read; the last is the upload's until its end.
    expect(replies).toEqual([...Array.from({ length: slots - 1 }, () => ({ id: 7, freed: true })), { id: 7, dataRows: 20 }]);
  });

  it("refuses a file with the inspector's own message, found on the thread", async () => {
    const bytes = Buffer.from(csv([validRow()], { columns: ['first_name', 'last_name'] }));
    const err = await pass(inspection().check(), bytes).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidImportFile);
    expect((err as InvalidImportFile).messages[0]).toMatch(/^The header row is missing the required columns: /u);
  });

  it('refuses a file whose problem is far into it, before the end of the upload is read', async () => {
    const good = file(50_000);
    const bytes = Buffer.concat([good, Buffer.from([0]), good, good, good, good]);
    let read = 0;
    const counted = async function* () {
      for (let at = 0; at < bytes.length; at += 64 * 1024) {
        read += 64 * 1024;
        yield bytes.subarray(at, at + 64 * 1024);
      }
    };
    const check = inspection().check();
    const err = await pipeline(Readable.from(counted()), check.stream, new Writable({ write: (_c, _e, done) => done() })).catch(
      (e: unknown) => e,
    );
    expect((err as InvalidImportFile).messages).toEqual([fileMessages.binary]);
    // Stopped within a window (and a message) of the bad byte, not at the end of the file.
    expect(read).toBeLessThan(good.length + 2 * INSPECTION_WINDOW_BYTES);
  });

  it('inspects uploads at once on the one thread, each with its own verdict', async () => {
    const inspector = inspection();
    // Ends with a byte sequence that is not UTF-8.
    const bad = Buffer.concat([file(10_000), Buffer.from([0xc3, 0x28, 0x0a])]);
    const results = await Promise.allSettled([
      pass(inspector.check(), file(10_000)),
      pass(inspector.check(), bad),
      pass(inspector.check(), file(20_000)),
    ]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.rows : (r.reason as InvalidImportFile).messages[0]))).toEqual([
      10_000,
      fileMessages.notUtf8,
      20_000,
    ]);
  });

  it('fails an upload under way with a 503 when the thread stops', async () => {
    const inspector = inspection();
    const check = inspector.check();
    const bytes = file(50_000);
    const source = Readable.from(
      (async function* () {
        yield bytes.subarray(0, 256 * 1024);
        // The thread stops with the upload half read.
        await inspector.close();
        yield bytes.subarray(256 * 1024);
      })(),
    );
    const err = await pipeline(source, check.stream, new Writable({ write: (_c, _e, done) => done() })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InspectionFault);
    expect((err as InspectionFault).code).toBe('UNAVAILABLE');
    expect(() => inspector.check()).toThrow(InspectionFault);
  });
});
