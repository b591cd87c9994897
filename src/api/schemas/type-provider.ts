import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';

import type { claimSchema, clientSchema } from './claims';
import type { errorSchema } from './common';
import type { incidentSchema, networkSchema } from './registry';

/**
 * The handlers' types come from the route schemas (json-schema-to-ts); response types resolve
 * the named schemas (`{ $ref: 'Claim#' }`) of the OpenAPI document.
 */
export type ApiTypeProvider = JsonSchemaToTsProvider<{
  SerializerSchemaOptions: {
    references: [typeof claimSchema, typeof clientSchema, typeof errorSchema, typeof incidentSchema, typeof networkSchema];
  };
}>;
