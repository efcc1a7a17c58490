/**
 * How the authorization server's answers appear in the OpenAPI document (a route schema's `documented`
 * key, kernel/openapi.ts): JSON answers with the headers they carry, OAuth error answers, HTML pages
 * (pages.ts) and redirects. The document only: Fastify serializes with the routes' `response` schemas.
 */
import { Type, type TSchema } from 'typebox';
import type { DocumentedExtras } from '../kernel/openapi.ts';
import { ErrorBody } from '../kernel/schemas.ts';

export type Answers = NonNullable<DocumentedExtras['responses']>;
type Answer = Answers[number];

const HtmlPage = Type.String({ description: 'A complete HTML page' });

/** What sendPage (pages.ts) sets on every page. */
const PAGE_HEADERS = {
  'Content-Security-Policy': Type.String({ description: 'default-src \'none\'; forms post only to this service (and, on the consent page, to the client)' }),
  'Cache-Control': Type.Literal('no-store'),
};

/** RFC 6749 §5.1 (and the endpoints that follow it): answers carrying credentials are not cached. */
export const NO_STORE = { 'Cache-Control': Type.Literal('no-store'), Pragma: Type.Literal('no-cache') };

export const RetryAfter = Type.Integer({ minimum: 1, description: 'Seconds to wait before trying again (RFC 9110 §10.2.3)' });

/** RFC 6750 §3 / RFC 6749 §5.2: the challenge of a 401. */
export const WwwAuthenticate = Type.String({ description: 'The authentication challenge (Bearer, RFC 6750 §3; Basic for client_secret_basic, RFC 6749 §5.2)' });

/** A JSON answer, with the headers it carries. */
export function json(description: string, schema: TSchema, headers?: Record<string, TSchema>): Answer {
  return { description, content: { 'application/json': schema }, ...(headers ? { headers } : {}) };
}

/** An error answer in the shared Error shape (RFC 6749 §5.2: error, error_description). */
export function oauthError(description: string, headers?: Record<string, TSchema>): Answer {
  return json(description, ErrorBody, headers);
}

/** A page of pages.ts. */
export function page(description: string, headers: Record<string, TSchema> = {}): Answer {
  return { description, content: { 'text/html': HtmlPage }, headers: { ...PAGE_HEADERS, ...headers } };
}

/** An error page, or the JSON error when the request was refused before the page handler ran (its URL, body or parameters). */
export function pageOrError(description: string): Answer {
  return { description, content: { 'text/html': HtmlPage, 'application/json': ErrorBody } };
}

/** A redirect (RFC 9110 §15.4): the browser goes to Location. */
export function redirect(description: string): Answer {
  return { description, headers: { Location: Type.String({ format: 'uri-reference', description: 'Where the browser goes next' }) } };
}

/**
 * Any route: a NUL in a parameter (kernel/storable-text.ts) or a URL the router cannot decode is a 400
 * before the route runs. The only client error of routes that take nothing else.
 */
export const BAD_URL: Answers = { 400: oauthError('invalid_request: the URL or a query parameter cannot be read (a NUL character, bad percent-encoding)') };

/** Requests with a body: Fastify's parsers refuse it before the route runs. */
export const BODY_ERRORS: Answers = {
  413: oauthError('payload_too_large: the body is larger than the endpoint reads (server.formBodyLimit for forms); `limit` names the limit and its setting'),
  415: oauthError('unsupported_media_type: the body is of a media type the service does not read'),
};
