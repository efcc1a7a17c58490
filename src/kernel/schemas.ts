/** Schemas shared by every domain's routes. */
import { Type } from 'typebox';

/** The one error shape (DESIGN "HTTP conventions"). */
export const ErrorBody = Type.Object(
  { error: Type.String(), error_description: Type.String() },
  { description: 'OAuth 2.0-shaped error' },
);
