import { decodeCursor, encodeCursor, invalidCursorMessage, type Cursor } from '../cursor';
import { validationError } from '../errors';
import type { Principal } from '../principal';
import type { AlertRepository } from './alerts';

export function createAlertService({ alerts, now = Date.now }: { alerts: AlertRepository; now?: () => number }) {
  /** GET /alerts: the caller's company's alerts, newest first, cursor-paged like the claims list. */
  async function list(
    principal: Pick<Principal, 'companyId'>,
    opts: { claim_id?: string | undefined; cursor?: string | undefined; limit: number },
  ) {
    let after: Cursor | undefined;
    if (opts.cursor) {
      after = decodeCursor(opts.cursor);
      if (!after) throw validationError({ cursor: [invalidCursorMessage] });
    }
    const rows = await alerts.list(principal.companyId, { claimId: opts.claim_id, after, limit: opts.limit + 1 });
    const page = rows.slice(0, opts.limit);
    const next = rows.length > opts.limit ? encodeCursor(page.at(-1)!.position) : null;
    return { data: page.map(({ position: _p, ...alert }) => alert), meta: { next_cursor: next } };
  }

  /** The dashboard's navigation count: alerts received in the last `days` days. */
  async function recentCount(principal: Pick<Principal, 'companyId'>, days = 7): Promise<number> {
    return alerts.countSince(principal.companyId, new Date(now() - days * 86_400_000).toISOString());
  }

  return { list, recentCount };
}
export type AlertService = ReturnType<typeof createAlertService>;
