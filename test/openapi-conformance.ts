import type { FastifyInstance } from 'fastify';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * Every answer of the API, in every test that uses the harness, checked against the OpenAPI
 * document the server publishes: its status is documented for the operation, its content type is
 * one the status documents, a JSON body matches the documented schema, and the headers a client
 * acts on (Location, WWW-Authenticate, Retry-After, Idempotent-Replayed, the RateLimit-* family)
 * are documented where they are sent. A generated client then accepts every answer the server
 * gives. Mismatches are collected and fail the test file when its context closes.
 */

type Doc = {
  paths: Record<string, Record<string, { responses?: Record<string, ResponseDoc> }>>;
};
type ResponseDoc = { content?: Record<string, { schema?: object }>; headers?: Record<string, unknown> };

/** Headers a client acts on: each one sent must be documented on that answer. */
const ACTED_ON = [
  'location',
  'www-authenticate',
  'retry-after',
  'idempotent-replayed',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
];

/** `/api/v1/claims/:id/status` as the document writes it: `/api/v1/claims/{id}/status`. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/gu, '{$1}');

export function checkResponsesAgainstOpenApi(app: FastifyInstance): { mismatches: string[] } {
  const found: string[] = [];
  let doc: Doc | undefined;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats.default(ajv);
  const validators = new Map<string, ValidateFunction>();

  const validatorFor = (pointer: string): ValidateFunction => {
    let v = validators.get(pointer);
    if (!v) {
      v = ajv.getSchema(`openapi.json#${pointer}`)!;
      validators.set(pointer, v);
    }
    return v;
  };

  app.addHook('onSend', async (request, reply, payload) => {
    const route = request.routeOptions.url;
    if (!route?.startsWith('/api/v1/') || route === '/api/v1/openapi.json') return payload;
    if (!doc) {
      doc = JSON.parse(JSON.stringify(app.swagger())) as Doc;
      ajv.addSchema(doc, 'openapi.json');
    }
    const path = openApiPath(route);
    const method = request.method.toLowerCase();
    const where = `${request.method} ${path} → ${reply.statusCode}`;
    const operation = doc.paths[path]?.[method];
    if (!operation) {
      found.push(`${where}: the operation is not in the OpenAPI document`);
      return payload;
    }
    const status = String(reply.statusCode);
    const answer = operation.responses?.[status] ?? operation.responses?.default;
    if (!answer) {
      found.push(`${where}: status ${status} is not documented`);
      return payload;
    }
    for (const header of ACTED_ON) {
      if (reply.hasHeader(header) && !Object.keys(answer.headers ?? {}).some((h) => h.toLowerCase() === header)) {
        found.push(`${where}: header ${header} is sent but not documented`);
      }
    }
    const type = String(reply.getHeader('content-type') ?? '')
      .split(';')[0]!
      .trim();
    const content = answer.content ?? {};
    if (Object.keys(content).length === 0) {
      if (payload !== undefined && payload !== null && payload !== '') found.push(`${where}: a body is sent, none is documented`);
      return payload;
    }
    if (!(type in content)) {
      found.push(`${where}: content type ${type || '(none)'} is not documented (documented: ${Object.keys(content).join(', ')})`);
      return payload;
    }
    if (type === 'application/json' && typeof payload === 'string' && content[type]?.schema) {
      const pointer = `/paths/${path.replace(/~/gu, '~0').replace(/\//gu, '~1')}/${method}/responses/${status}/content/application~1json/schema`;
      const validate = validatorFor(pointer);
      if (!validate(JSON.parse(payload))) {
        found.push(`${where}: the body does not match its schema: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
      }
    }
    return payload;
  });
  return { mismatches: found };
}
