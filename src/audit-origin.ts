import type { FastifyRequest } from 'fastify';

import type { AuditOrigin } from './domain/audit/audit';

/** The `ip` and `request_id` of an audit event recorded while answering this request. */
export const auditOrigin = (request: FastifyRequest): AuditOrigin => ({ ip: request.ip || null, requestId: String(request.id) });
