import { finished } from 'node:stream/promises';
import { parentPort, workerData } from 'node:worker_threads';

import { createFileInspector, InvalidImportFile } from '../domain/imports/csv-file';
import { lowerThisThreadsPriority } from './thread-priority';
import type { InspectionData, InspectionReply, InspectionRequest } from './upload-inspection';

// The body of the server's upload inspection thread (upload-inspection.ts): one import file
// inspector (src/domain/imports/csv-file.ts) per upload it is sent, fed the upload's bytes in
// order from the memory it shares with the server's thread. A slot is freed once the slot after
// it has been inspected: the CSV parser keeps a view of a chunk's unparsed end until the next
// chunk's bytes are joined to it, and the server fills a freed slot again at once. The end is
// answered with the data rows or the file's problem.

const port = parentPort!;
const { nice } = workerData as InspectionData;
const reply = (msg: InspectionReply) => port.postMessage(msg);
const open = new Map<number, ReturnType<typeof createFileInspector>>();
/** Each upload's shared memory, and whether a slot is held (inspected, not yet freed). */
const memories = new Map<number, { memory: SharedArrayBuffer; slotBytes: number; holding: boolean }>();
/** Uploads refused here whose bytes may still be arriving: dropped until the server's abort. */
const refused = new Set<number>();

/** The file's problem as its messages; anything else as a fault of the inspection, with its system error code only. */
function refusal(id: number, err: unknown): InspectionReply {
  if (err instanceof InvalidImportFile) return { id, invalid: err.messages };
  const code = (err as { code?: unknown } | null)?.code;
  return { id, fault: typeof code === 'string' ? { code } : {} };
}

function inspectorOf(id: number) {
  let inspector = open.get(id);
  if (inspector) return inspector;
  inspector = createFileInspector();
  // What passes through is not needed here: the server stores its own copy of the bytes.
  inspector.resume();
  inspector.on('error', (err) => {
    if (!open.has(id)) return;
    open.delete(id);
    refused.add(id);
    reply(refusal(id, err));
  });
  open.set(id, inspector);
  return inspector;
}

lowerThisThreadsPriority(nice);
port.on('message', (msg: InspectionRequest) => {
  if (msg.op === 'abort') {
    open.get(msg.id)?.destroy();
    open.delete(msg.id);
    memories.delete(msg.id);
    refused.delete(msg.id);
    return;
  }
  if (msg.op === 'open') {
    memories.set(msg.id, { memory: msg.memory, slotBytes: msg.slotBytes, holding: false });
    return;
  }
  if (refused.has(msg.id)) return;
  const inspector = inspectorOf(msg.id);
  if (msg.op === 'chunk') {
    const shared = memories.get(msg.id)!;
    const bytes = Buffer.from(shared.memory, msg.slot * shared.slotBytes, msg.length);
    inspector.write(bytes, (err) => {
      if (err || !open.has(msg.id)) return;
      if (shared.holding) reply({ id: msg.id, freed: true });
      shared.holding = true;
    });
    return;
  }
  inspector.end();
  finished(inspector).then(
    () => {
      memories.delete(msg.id);
      if (!open.delete(msg.id)) return;
      reply({ id: msg.id, dataRows: inspector.result().dataRows });
    },
    () => {
      // The inspector's 'error' handler has answered.
    },
  );
});
