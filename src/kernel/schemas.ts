/** Schemas shared by every domain's routes. */
import { Type } from 'typebox';

/** The one error shape (DESIGN "HTTP conventions"). */
export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    error_description: Type.String(),
    request_id: Type.Optional(Type.String({ description: 'The X-Request-Id of the request, for support and logs' })),
  },
  // The title names it in the OpenAPI document, where every error answer refers to it (app/openapi.ts).
  { title: 'Error', description: 'OAuth 2.0-shaped error' },
);
