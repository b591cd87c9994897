import { OPTIONAL_COLUMNS, REQUIRED_COLUMNS } from './csv-file';

/** What the import tells the person who uploaded the file, at each turn of its life. */
export const importMessages = {
  unavailable: 'Imports are unavailable right now (the job queue cannot be reached); nothing was imported. Try again later.',
  failed: 'The import could not be completed; nothing was imported. Try again later.',
  waitingForStorage: 'Waiting for the file storage, which cannot be reached right now; the import goes on when it is back.',
  storageOutage: (seconds: number) =>
    `The file storage could not be reached for ${seconds} seconds, so the file could not be read; nothing was imported. Upload the file again.`,
  notFound: 'Import not found.',
  cancelled: 'The import was cancelled; nothing was imported.',
  alreadyFinished: 'The import has already finished.',
  finished: (imported: number, failed: number) => `Import finished: ${imported} imported, ${failed} failed.`,
} as const;

/** Column order for the messages of a row (the database keeps JSON object keys in its own order). */
const COLUMN_ORDER = new Map<string, number>(['row', ...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS].map((c, i) => [c, i]));
/** A row's messages with their columns in the file's order (row, then the columns as documented). */
export const byColumn = (messages: Record<string, string[]>) =>
  Object.fromEntries(Object.entries(messages).sort(([a], [b]) => (COLUMN_ORDER.get(a) ?? 99) - (COLUMN_ORDER.get(b) ?? 99)));
