// The embedded database's thread (see openPglite in db.ts). PGlite runs PostgreSQL compiled to
// WebAssembly on the thread that calls it, for as long as a statement runs; here that is this
// worker thread, so the server's own thread keeps answering requests (and reading, validating and
// hashing the next import chunk) meanwhile. Plain JavaScript: it runs without the TypeScript loader.
//
// Messages in: { id, op: 'query' | 'exec' | 'close', text, params }; out: { id, rows } or
// { id, error }. Statements run in the order they arrive; the caller sends one at a time.
import { parentPort, workerData } from 'node:worker_threads';

import { PGlite } from '@electric-sql/pglite';

/** Dates stay `YYYY-MM-DD` strings end to end: a Date would shift a day with a time zone. */
const DATE_OID = 1082;

/**
 * What crosses back of a failed statement: the message and PostgreSQL's fields (code, constraint,
 * detail…), never the statement or its parameters.
 */
function plainError(err) {
  const out = { message: err instanceof Error ? err.message : String(err) };
  if (err && typeof err === 'object') {
    for (const [key, value] of Object.entries(err)) {
      if (key === 'query' || key === 'params' || key === 'queryOptions') continue;
      if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) out[key] = value;
    }
  }
  return out;
}

const { dataDir, settings } = workerData;
const pg = new PGlite({
  ...(dataDir ? { dataDir } : {}),
  parsers: { [DATE_OID]: (v) => v },
  startParams: [...PGlite.defaultStartParams, ...settings.flatMap((setting) => ['-c', setting])],
});
try {
  await pg.waitReady;
  parentPort.postMessage({ id: 0, rows: [] });
} catch (err) {
  parentPort.postMessage({ id: 0, error: plainError(err) });
}

parentPort.on('message', async ({ id, op, text, params }) => {
  try {
    if (op === 'query') {
      parentPort.postMessage({ id, rows: (await pg.query(text, params)).rows });
    } else if (op === 'exec') {
      await pg.exec(text);
      parentPort.postMessage({ id, rows: [] });
    } else {
      await pg.close();
      parentPort.postMessage({ id, rows: [] });
      parentPort.close();
    }
  } catch (err) {
    parentPort.postMessage({ id, error: plainError(err) });
  }
});
