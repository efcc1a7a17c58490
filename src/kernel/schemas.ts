/** Schemas shared by every domain's routes. */
import { Type } from 'typebox';

/** What a 413 says of the limit the body went past (kernel/body-limits.ts). */
export const LimitBody = Type.Object(
  {
    bytes: Type.Optional(Type.Integer({ minimum: 0, description: 'the limit in bytes' })),
    count: Type.Optional(Type.Integer({ minimum: 0, description: 'the limit as a count (files, form fields, parts), for limits that are not in bytes' })),
    text: Type.String({ description: "the limit as a person reads it: '4 MiB', '1000 files'" }),
    setting: Type.String({ description: "the configuration key that sets it: 'server.bodyLimit', 'jobs.sandbox.maxFileSize'" }),
  },
  { description: 'payload_too_large only: the limit, and the configuration key that sets it' },
);

/** The one error shape, OAuth 2.0's (RFC 6749 §5.2), for every error answer. */
export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    error_description: Type.String(),
    request_id: Type.Optional(Type.String({ description: 'The X-Request-Id of the request, for support and logs' })),
    limit: Type.Optional(LimitBody),
  },
  // The title names it in the OpenAPI document, where every error answer refers to it (app/openapi.ts).
  { title: 'Error', description: 'OAuth 2.0-shaped error' },
);
