// The embedded database's own thread (see openPglite in db.ts). PGlite runs PostgreSQL compiled to
// WebAssembly: each statement runs to its end without yielding, so on the server's thread a chunk
// of an import would hold every request (and the import's own parsing) for as long as it ran.
// Here it runs beside them. Plain JavaScript, so that it loads the same way under `node --import
// tsx`, under vitest and in the container: it needs nothing but PGlite.
//
// Messages in: { id, op: 'query', text, params } | { id, op: 'exec', text } | { id, op: 'close' }.
// Messages out: { id, rows } on success, { id, error } on failure, where error holds the message
// and PostgreSQL's fields (code, constraint, ...) but never a stack; { ready: true } once open,
// { failed } if it could not open.
import { setFlagsFromString } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';

/** Dates stay `YYYY-MM-DD` strings end to end: a Date would shift a day with a time zone. */
const DATE_OID = 1082;

/** The message and the scalar fields of a database error (code, detail, constraint, ...). */
function describe(err) {
  const out = { message: err instanceof Error ? err.message : String(err) };
  if (err && typeof err === 'object') {
    for (const [key, value] of Object.entries(err)) {
      if (key !== 'stack' && (value === null || ['string', 'number', 'boolean'].includes(typeof value))) out[key] = value;
    }
  }
  return out;
}

const { dataDir, settings, v8Flags } = workerData;
let pg;
try {
  if (v8Flags) setFlagsFromString(v8Flags);
  const { PGlite } = await import('@electric-sql/pglite');
  pg = new PGlite({
    ...(dataDir ? { dataDir } : {}),
    parsers: { [DATE_OID]: (v) => v },
    startParams: [...PGlite.defaultStartParams, ...settings.flatMap((setting) => ['-c', setting])],
  });
  await pg.waitReady;
} catch (err) {
  parentPort.postMessage({ failed: describe(err) });
  process.exit(1);
}

// PGlite queues statements in the order they arrive, so each is handed over at once: a statement
// sent behind another (a chunk's ledger entry behind its write) runs right after it.
parentPort.on('message', (msg) => {
  const work =
    msg.op === 'query'
      ? pg.query(msg.text, msg.params).then((r) => r.rows)
      : msg.op === 'exec'
        ? pg.exec(msg.text).then(() => [])
        : pg.close().then(() => []);
  work.then(
    (rows) => parentPort.postMessage({ id: msg.id, rows }),
    (err) => parentPort.postMessage({ id: msg.id, error: describe(err) }),
  );
  // Closed either way; a failed close was answered above and must not also be an unhandled rejection.
  if (msg.op === 'close')
    work.then(
      () => parentPort.close(),
      () => parentPort.close(),
    );
});
parentPort.postMessage({ ready: true });
