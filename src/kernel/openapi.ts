/**
 * What every domain's routes say to the OpenAPI document beyond what Fastify validates: who may call an
 * operation (its security requirements), and the request bodies and responses that Fastify does not
 * parse or serialize itself (multipart, NDJSON and form bodies; archives and stored documents). The
 * composition root (`app/openapi.ts`) turns `documented` into the operation's requestBody and responses;
 * the schemas stay TypeBox schemas, so the document and the code share them.
 */
import { Type, type TSchema } from 'typebox';
import { ErrorBody } from './schemas.ts';

/** Security requirements (OpenAPI 3.1 §4.8.30), one name per kind of caller. */
export const SECURITY = {
  /** Resource operations: an access token, in the Authorization header (RFC 6750 §2.1) or, discouraged, the query (§2.3). */
  token: [{ bearer: [] }, { accessTokenQuery: [] }, { oauth2: [] }],
  /** Flow A: the client certificate (or RFC 3820 proxy) of the TLS handshake. */
  certificate: [{ mutualTLS: [] }],
  /** OAuth endpoints that authenticate the client (RFC 6749 §2.3): a secret, a certificate, or none for public clients. */
  client: [{}, { clientSecretBasic: [] }, { mutualTLS: [] }],
  /** Operations anyone may call: probes, discovery, the sign-in pages. */
  none: [],
} as const;

export interface DocumentedExtras {
  /** Request bodies by media type, for bodies Fastify does not validate as JSON. */
  body?: Record<string, TSchema>;
  /** Responses by status: a schema per media type, and the headers they carry. */
  responses?: Record<number, { description: string; content?: Record<string, TSchema>; headers?: Record<string, TSchema> }>;
}

/** Route-schema key read by the document builder only; Fastify ignores keys it does not know. */
export const DOCUMENTED = 'documented';

/** An opaque byte stream (OpenAPI 3.1 §4.8.14.5: binary content is a string without a format in 3.1). */
export const Binary = Type.Unsafe<Uint8Array>({ type: 'string', contentMediaType: 'application/octet-stream' });

/** An error answer: the shared Error schema, by status, for the statuses an operation can answer with. */
export function errors(...statuses: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBody]));
}

declare module 'fastify' {
  interface FastifySchema {
    /** Read by the OpenAPI document only (see DocumentedExtras). */
    documented?: DocumentedExtras;
  }
}
