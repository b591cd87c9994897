import type { ImportFailure, ImportRecord, ImportStatus, ImportRepos, ImportTx } from './ports';

/**
 * The import's state machine: the only place that changes an import's status. Every change is
 * checked against the allowed moves, written with its time into the import's history, and a move
 * into a terminal status (completed, failed, cancelled) calls `onTerminal` inside the same
 * transaction (for example to write an outbox row that announces it).
 *
 *   queued ──► processing ──► completed
 *     │            │  ▲ (a new attempt resumes after the last committed chunk)
 *     │            ├──┘
 *     │            ├────────► failed
 *     ├────────────┴────────► cancelled
 *     └─────────────────────► failed
 */
export const TRANSITIONS: Readonly<Record<ImportStatus, readonly ImportStatus[]>> = {
  queued: ['processing', 'failed', 'cancelled'],
  processing: ['processing', 'completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};
export const TERMINAL: readonly ImportStatus[] = ['completed', 'failed', 'cancelled'];
export const isTerminal = (status: ImportStatus) => TERMINAL.includes(status);

const sourcesOf = (to: ImportStatus) => (Object.keys(TRANSITIONS) as ImportStatus[]).filter((from) => TRANSITIONS[from].includes(to));

export type StateMachineDeps<Tx extends ImportTx> = {
  repos: ImportRepos<Tx>;
  /** Runs in the transaction of every move into completed, failed or cancelled. */
  onTerminal?: (tx: Tx, run: ImportRecord) => Promise<void>;
};

export function createImportStateMachine<Tx extends ImportTx>({ repos, onTerminal }: StateMachineDeps<Tx>) {
  /** One move inside the caller's transaction; undefined when the import is not in a status that allows it. */
  async function transition(
    tx: Tx,
    importId: string,
    to: ImportStatus,
    patch: { message?: string | null; failure?: ImportFailure | null } = {},
  ): Promise<ImportRecord | undefined> {
    const run = await tx.imports.transition(importId, sourcesOf(to), to, {
      ...patch,
      ...(to === 'processing' ? { startAttempt: true } : {}),
      ...(to === 'completed' ? { summaryFromLedger: true, message: null, failure: null } : {}),
    });
    if (run && isTerminal(to)) await onTerminal?.(tx, run);
    return run;
  }

  return {
    transition,
    /** A new attempt: queued or processing → processing. */
    start: (importId: string) => repos.transaction((tx) => transition(tx, importId, 'processing')),
    /** Every valid row is committed: the summary is built from the ledger (a cancel asked meanwhile wins). */
    complete: (importId: string) =>
      repos.transaction(async (tx) => {
        const state = await tx.imports.lock(importId);
        if (!state) return undefined;
        if (state.cancelRequested) return transition(tx, importId, 'cancelled');
        return transition(tx, importId, 'completed');
      }),
    fail: (importId: string, failure: ImportFailure, message: string) =>
      repos.transaction((tx) => transition(tx, importId, 'failed', { failure, message })),
    cancel: (importId: string) => repos.transaction((tx) => transition(tx, importId, 'cancelled')),
  };
}
export type ImportStateMachine<Tx extends ImportTx> = ReturnType<typeof createImportStateMachine<Tx>>;
