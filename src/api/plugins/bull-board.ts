import { timingSafeEqual } from 'node:crypto';

import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import basicAuth from '@fastify/basic-auth';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

import type { Config } from '../../config';
import { AppError } from '../../domain/errors';

export const BULL_BOARD_PATH = '/admin/queues';

const same = (a: string, b: string) => {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * The operator check in front of Bull Board, kept in this one function so that operator sign-in
 * (the dashboard issue) can replace it: for now HTTP basic auth against OPERATOR_USER /
 * OPERATOR_PASSWORD. Without those settings nobody gets in. Everyone else gets 401.
 */
export async function requireOperator(scope: FastifyInstance, operator: Config['operator']): Promise<void> {
  await scope.register(basicAuth, {
    authenticate: { realm: 'Claims registry operator' },
    validate: async (user: string, password: string) => {
      // Both compared, always, so the timing does not tell which one was wrong.
      const ok = [same(user, operator?.user ?? '\u0000'), same(password, operator?.password ?? '\u0000')];
      if (!operator || !ok.every(Boolean)) throw new AppError('UNAUTHORIZED', 'Unauthenticated.');
    },
  });
  scope.addHook('onRequest', (request, reply, done) => {
    scope.basicAuth(request, reply, (err?: Error) => done(err ? new AppError('UNAUTHORIZED', 'Unauthenticated.') : undefined));
  });
}

/** Bull Board for the import queue, at /admin/queues, behind `requireOperator`. */
export async function bullBoardPlugin(app: FastifyInstance, opts: { queue: Queue; operator: Config['operator'] }): Promise<void> {
  if (!opts.operator) app.log.warn('OPERATOR_USER/OPERATOR_PASSWORD are not set: Bull Board at /admin/queues answers 401 to everyone');
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  // @bull-board/fastify 9.10.1 nests its own @bull-board/api 9.10.1 beside our 9.10.2: the same
  // shapes, declared twice, so the compiler needs telling.
  type ServerAdapter = Parameters<typeof createBullBoard>[0]['serverAdapter'];
  createBullBoard({ queues: [new BullMQAdapter(opts.queue)], serverAdapter: serverAdapter as unknown as ServerAdapter });
  await app.register(async (scope) => {
    await requireOperator(scope, opts.operator);
    await scope.register(serverAdapter.registerPlugin(), { prefix: BULL_BOARD_PATH });
  });
}
