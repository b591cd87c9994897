import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

import { operatorSessionHook } from './operator-guard';

export const BULL_BOARD_PATH = '/admin/queues';

/**
 * The operator check in front of Bull Board: the dashboard's sign-in. A signed-in operator
 * passes; a browser is sent to /login (and back here afterwards), a signed-in company person to
 * the dashboard; any other request (Bull Board's own API calls, scripts) gets 401.
 */
export async function requireOperator(scope: FastifyInstance): Promise<void> {
  scope.addHook('onRequest', operatorSessionHook(scope.deps, BULL_BOARD_PATH));
}

/** Bull Board for the import queue, at /admin/queues, behind `requireOperator`. */
export async function bullBoardPlugin(app: FastifyInstance, opts: { queue: Queue }): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  // @bull-board/fastify 9.10.1 nests its own @bull-board/api 9.10.1 beside our 9.10.2: the same
  // shapes, declared twice, so the compiler needs telling.
  type ServerAdapter = Parameters<typeof createBullBoard>[0]['serverAdapter'];
  createBullBoard({ queues: [new BullMQAdapter(opts.queue)], serverAdapter: serverAdapter as unknown as ServerAdapter });
  await app.register(async (scope) => {
    await requireOperator(scope);
    await scope.register(serverAdapter.registerPlugin(), { prefix: BULL_BOARD_PATH });
  });
}
