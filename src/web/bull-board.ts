import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

import { auditOrigin } from '../audit-origin';
import { operatorActor, type AuditAction } from '../domain/audit/audit';
import { routesNeed } from '../http-access';
import { operatorOf, operatorSessionHook } from './operator-guard';

export const BULL_BOARD_PATH = '/admin/queues';

/**
 * The operator check in front of Bull Board: the dashboard's sign-in. A signed-in operator
 * passes; a browser is sent to /login (and back here afterwards), a signed-in company person to
 * the dashboard; any other request (Bull Board's own API calls, scripts) gets 401.
 */
export async function requireOperator(scope: FastifyInstance): Promise<void> {
  // Every route Bull Board registers needs the operator (http-access.ts, access.ts).
  routesNeed(scope, 'operator');
  scope.addHook('onRequest', operatorSessionHook(scope.deps, BULL_BOARD_PATH));
}

/** Bull Board's state-changing API routes (after /admin/queues/api/queues) and the audit action of each; any other change is `queue.changed`. */
const QUEUE_ACTIONS: [RegExp, AuditAction][] = [
  [/^\/:queueName\/:jobId\/retry$/u, 'queue.job_retried'],
  [/^\/:queueName\/:jobId\/(clean|remove-unprocessed-children)$/u, 'queue.job_removed'],
  [/^\/:queueName\/:jobId\/promote$/u, 'queue.job_promoted'],
  [/^\/:queueName\/:jobId\/(update-data|delay|priority)$/u, 'queue.job_updated'],
  [/^\/:queueName\/add$/u, 'queue.job_added'],
  [/^\/:queueName\/retry\/:queueStatus$/u, 'queue.jobs_retried'],
  [/^\/:queueName\/promote$/u, 'queue.jobs_promoted'],
  [/^\/:queueName\/clean\/:queueStatus$/u, 'queue.cleaned'],
  [/^\/:queueName\/(empty|obliterate)$/u, 'queue.emptied'],
  [/^(\/:queueName)?\/pause$/u, 'queue.paused'],
  [/^(\/:queueName)?\/resume$/u, 'queue.resumed'],
];
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function queueActionOf(routeUrl: string): AuditAction {
  const tail = routeUrl.replace(`${BULL_BOARD_PATH}/api/queues`, '');
  return QUEUE_ACTIONS.find(([re]) => re.test(tail))?.[1] ?? 'queue.changed';
}

/**
 * Every change the operator makes in Bull Board (retry, remove, promote, clean, pause...) is an
 * audit event, recorded once the change is made and before it is answered: the queue lives in
 * Redis, so the event cannot share its transaction.
 */
async function recordQueueActs(scope: FastifyInstance): Promise<void> {
  scope.addHook('onSend', async (request, reply, payload) => {
    if (!STATE_CHANGING.has(request.method) || reply.statusCode >= 400) return payload;
    const operator = operatorOf(request);
    const params = (request.params ?? {}) as { queueName?: string; jobId?: string; queueStatus?: string };
    const origin = auditOrigin(request);
    await scope.deps.audit.record({
      companyId: null,
      action: queueActionOf(request.routeOptions.url ?? ''),
      actor: operator ? operatorActor(operator) : { type: 'operator', id: null, name: 'operator' },
      target: params.jobId
        ? { type: 'queue_job', id: params.jobId, name: params.queueName ?? null }
        : { type: 'queue', id: params.queueName ?? null, name: params.queueStatus ?? null },
      ip: origin.ip,
      requestId: origin.requestId,
    });
    return payload;
  });
}

/** Bull Board for the import queue, at /admin/queues, behind `requireOperator`; the operator's changes are audited. */
export async function bullBoardPlugin(app: FastifyInstance, opts: { queue: Queue }): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  // @bull-board/fastify 9.10.1 nests its own @bull-board/api 9.10.1 beside our 9.10.2: the same
  // shapes, declared twice, so the compiler needs telling.
  type ServerAdapter = Parameters<typeof createBullBoard>[0]['serverAdapter'];
  createBullBoard({ queues: [new BullMQAdapter(opts.queue)], serverAdapter: serverAdapter as unknown as ServerAdapter });
  await app.register(async (scope) => {
    await requireOperator(scope);
    await recordQueueActs(scope);
    await scope.register(serverAdapter.registerPlugin(), { prefix: BULL_BOARD_PATH });
  });
}
