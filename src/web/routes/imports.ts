import type { FastifyInstance } from 'fastify';

/** Import pages: built last, on the import service (see the report). */
export async function importRoutes(_app: FastifyInstance) {}
