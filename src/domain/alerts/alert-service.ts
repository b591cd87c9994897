import { pageOf, pageRequest } from '../paging';
import type { Principal } from '../principal';
import type { AlertRepository } from './alerts';

export function createAlertService({ alerts, now = Date.now }: { alerts: AlertRepository; now?: () => number }) {
  /** GET /alerts: the caller's company's alerts, newest first, cursor-paged like the claims list. */
  async function list(
    principal: Pick<Principal, 'companyId'>,
    opts: { claim_id?: string | undefined; cursor?: string | undefined; limit: number },
  ) {
    const rows = await alerts.list(principal.companyId, { claimId: opts.claim_id, ...pageRequest(opts) });
    return pageOf(rows, opts.limit, ({ position: _p, ...alert }) => alert);
  }

  /** The dashboard's navigation count: alerts received in the last `days` days. */
  async function recentCount(principal: Pick<Principal, 'companyId'>, days = 7): Promise<number> {
    return alerts.countSince(principal.companyId, new Date(now() - days * 86_400_000).toISOString());
  }

  return { list, recentCount };
}
export type AlertService = ReturnType<typeof createAlertService>;
