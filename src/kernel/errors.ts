/**
 * One error model for the whole service. Every error a route can raise is a DirigoError subclass with a
 * stable snake_case `code`; `httpStatus` is the single mapping to HTTP. The wire shape is the OAuth 2.0
 * one (RFC 6749 §5.2): `{"error": code, "error_description": text}`.
 */
import { limitAnswer, tooLargeText, type BodyLimit, type BodyLimitAnswer } from './body-limits.ts';

export class DirigoError extends Error {
  readonly code: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: string, status: number, description: string, headers: Record<string, string> = {}) {
    super(description);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.headers = headers;
  }

  toJSON(): { error: string; error_description: string } {
    return { error: this.code, error_description: this.message };
  }
}

/**
 * RFC 6750 §3: error_description is %x20-21 / %x23-5B / %x5D-7E, so a text that names client input (a
 * catalogue path, say) keeps only those; anything else, which Node would refuse in a header, becomes '?'.
 */
function challengeText(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?');
}

/** RFC 6750 §3: scope tokens are %x21 / %x23-5B / %x5D-7E; other bytes are percent-encoded (UTF-8). */
function challengeScope(scope: string): string {
  return scope
    .split(' ')
    .map((token) => token.replace(/[^\x21\x23-\x5b\x5d-\x7e]/gu, (c) => (c.length === 1 && c >= '\ud800' && c <= '\udfff' ? '%EF%BF%BD' : encodeURIComponent(c))))
    .join(' ');
}

/** 400: a bad parameter, body or path; the description names it. */
export class InvalidRequest extends DirigoError {
  constructor(description: string) {
    super('invalid_request', 400, description);
  }
}

/** 401 for resource requests (RFC 6750 §3): the token is missing, malformed, expired or revoked. */
export class InvalidToken extends DirigoError {
  constructor(description: string, realm = 'dirigo') {
    super('invalid_token', 401, description, {
      'www-authenticate': `Bearer realm="${realm}", error="invalid_token", error_description="${challengeText(description)}"`,
    });
  }
}

/** 401 without an error code: no credentials were sent at all (RFC 6750 §3.1). */
export class AuthenticationRequired extends DirigoError {
  constructor(description = 'an access token is required', realm = 'dirigo') {
    super('invalid_token', 401, description, { 'www-authenticate': `Bearer realm="${realm}"` });
  }
}

/** 403: authenticated but not allowed. */
export class InsufficientPrivileges extends DirigoError {
  constructor(description: string) {
    super('insufficient_privileges', 403, description);
  }
}

/**
 * 403 for resource requests whose token lacks a scope (RFC 6750 §3.1 insufficient_scope); `scope` names
 * the scopes that would do, for the WWW-Authenticate challenge (§3).
 */
export class InsufficientScope extends DirigoError {
  constructor(description: string, scope: string, realm = 'dirigo') {
    super('insufficient_scope', 403, description, {
      'www-authenticate': `Bearer realm="${realm}", error="insufficient_scope", error_description="${challengeText(description)}", scope="${challengeScope(scope)}"`,
    });
  }
}

export class NotFound extends DirigoError {
  constructor(description: string) {
    super('not_found', 404, description);
  }
}

export class Conflict extends DirigoError {
  constructor(description: string) {
    super('conflict', 409, description);
  }
}

export class InvalidTransition extends DirigoError {
  constructor(description: string) {
    super('invalid_transition', 409, description);
  }
}

/** RFC 9110 §15.5.15: a request target longer than the service reads. */
export class UriTooLong extends DirigoError {
  constructor(description: string) {
    super('uri_too_long', 414, description);
  }
}

/**
 * 413: a body, or a part of one, beyond a limit. The answer names the limit (bytes, readable) and the
 * configuration key that sets it, in its description and as `limit` (body-limits.ts).
 */
export class PayloadTooLarge extends DirigoError {
  readonly limit: BodyLimit | undefined;

  /** `what` went past `limit`: "file 'big.bin'", "the JSON body". */
  constructor(what: string, limit?: BodyLimit) {
    super('payload_too_large', 413, limit ? tooLargeText(what, limit) : what);
    this.limit = limit;
  }

  override toJSON(): { error: string; error_description: string; limit?: BodyLimitAnswer } {
    return { ...super.toJSON(), ...(this.limit ? { limit: limitAnswer(this.limit) } : {}) };
  }
}

/** 413: a user's live sandboxes would take more bytes than their quota (docs/sandboxes.md). */
export class SandboxQuotaExceeded extends DirigoError {
  constructor(description: string) {
    super('sandbox_quota_exceeded', 413, description);
  }
}

export class UnsupportedMediaType extends DirigoError {
  constructor(description: string) {
    super('unsupported_media_type', 415, description);
  }
}

export class TooManyRequests extends DirigoError {
  constructor(description: string, retryAfterSeconds: number) {
    super('too_many_requests', 429, description, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

/** The disk is full (RFC 4918 §11.5): the server's condition, not the request's fault. */
export class InsufficientStorage extends DirigoError {
  constructor(description: string) {
    super('insufficient_storage', 507, description);
  }
}
export class ServiceUnavailable extends DirigoError {
  constructor(description: string, retryAfterSeconds = 5) {
    super('service_unavailable', 503, description, { 'retry-after': String(retryAfterSeconds) });
  }
}

/** 500 whose description never leaks internals. */
export class ServerError extends DirigoError {
  constructor(description = 'internal server error') {
    super('server_error', 500, description);
  }
}

// OAuth 2.0 token-endpoint errors, named after their RFC 6749 §5.2 / RFC 8628 §3.5 codes.

export class InvalidClient extends DirigoError {
  constructor(description: string, challenge?: string) {
    super('invalid_client', 401, description, challenge ? { 'www-authenticate': challenge } : {});
  }
}
export class InvalidGrant extends DirigoError {
  constructor(description: string) {
    super('invalid_grant', 400, description);
  }
}
export class UnauthorizedClient extends DirigoError {
  constructor(description: string) {
    super('unauthorized_client', 400, description);
  }
}
export class UnsupportedGrantType extends DirigoError {
  constructor(description: string) {
    super('unsupported_grant_type', 400, description);
  }
}
export class InvalidScope extends DirigoError {
  constructor(description: string) {
    super('invalid_scope', 400, description);
  }
}
/** RFC 7591 §3.2.2. */
export class InvalidClientMetadata extends DirigoError {
  constructor(description: string) {
    super('invalid_client_metadata', 400, description);
  }
}
/** RFC 7591 §3.2.2. */
export class InvalidRedirectUri extends DirigoError {
  constructor(description: string) {
    super('invalid_redirect_uri', 400, description);
  }
}
export class AccessDenied extends DirigoError {
  constructor(description: string) {
    super('access_denied', 400, description);
  }
}
export class UnsupportedResponseType extends DirigoError {
  constructor(description: string) {
    super('unsupported_response_type', 400, description);
  }
}
export class AuthorizationPending extends DirigoError {
  constructor(description = 'the user has not yet completed the authorization') {
    super('authorization_pending', 400, description);
  }
}
export class SlowDown extends DirigoError {
  constructor(description = 'polling too fast; increase the interval by 5 seconds') {
    super('slow_down', 400, description);
  }
}
export class ExpiredToken extends DirigoError {
  constructor(description = 'the device code has expired') {
    super('expired_token', 400, description);
  }
}
