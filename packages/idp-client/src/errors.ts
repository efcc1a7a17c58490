/**
 * Error classes. The protocol layer (snake_case operations) throws these; the provider layer
 * (camelCase operations) turns them into S_ERROR results.
 */
import type { CaseInsensitiveDict } from './structures.ts';

/**
 * What a failure keeps of the response it was raised for. The object is always the session's `Response`
 * (`err.response instanceof Response` narrows it); this interface names what errors promise of it, so
 * that the error classes need not import the HTTP models that throw them.
 */
export interface ErrorResponse {
  readonly status_code: number;
  readonly reason: string;
  readonly url: string;
  readonly ok: boolean;
  readonly headers: CaseInsensitiveDict<string>;
  /** The decoded body (read unless the request streamed). */
  readonly text: string;
  json<T = unknown>(): T;
}

/** Base of every HTTP-session failure (requests' RequestException). */
export class RequestException extends Error {
  override name = 'RequestException';
  response: ErrorResponse | undefined;
  constructor(message: string, options: { response?: ErrorResponse; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.response = options.response;
  }
}

/** The connection could not be made (DNS, refused, reset, TLS handshake). */
export class ConnectionError extends RequestException { override name = 'ConnectionError'; }
/** The proxy could not be reached or refused the tunnel. */
export class ProxyError extends ConnectionError { override name = 'ProxyError'; }
/** The server's certificate was not accepted, or the client certificate could not be loaded. */
export class SSLError extends ConnectionError { override name = 'SSLError'; }
/** No response (headers or body) within the timeout. */
export class Timeout extends RequestException { override name = 'Timeout'; }
/** `raise_for_status` on a 4xx/5xx response. */
export class HTTPError extends RequestException { override name = 'HTTPError'; }
/** No adapter is mounted for the URL's scheme. */
export class InvalidSchema extends RequestException { override name = 'InvalidSchema'; }
/** A URL that cannot be parsed. */
export class InvalidURL extends RequestException { override name = 'InvalidURL'; }

/** More redirects than `max_redirects`. */
export class TooManyRedirects extends RequestException { override name = 'TooManyRedirects'; }

/**
 * An OAuth 2.0 protocol error (RFC 6749 §5.2): `error` is the RFC code, `status` the HTTP status when
 * the error came from a response.
 */
export class OAuthError extends Error {
  override name = 'OAuthError';
  error: string;
  error_description: string | undefined;
  error_uri: string | undefined;
  status: number | undefined;
  constructor(error: string, error_description?: string, options: { error_uri?: string; status?: number; cause?: unknown } = {}) {
    super(error_description ? `${error}: ${error_description}` : error, { cause: options.cause });
    this.error = error;
    this.error_description = error_description;
    this.error_uri = options.error_uri;
    this.status = options.status;
  }
}

/** An OAuth endpoint that is not HTTPS, without the explicit `insecure_transport` opt-out. */
export class InsecureTransportError extends OAuthError {
  override name = 'InsecureTransportError';
  constructor(url: string) {
    super('insecure_transport', `OAuth 2 MUST utilize https: ${redactUrl(url)}`);
  }
}

/** The URL without userinfo, query and fragment, safe to put in messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '<invalid URL>';
  }
}
