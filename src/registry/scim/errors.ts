/**
 * SCIM errors (RFC 7644 §3.12): a DirigoError that also names the `scimType` the SCIM error message
 * carries. The SCIM routes answer every error, theirs or the kernel's, in that message (routes.ts).
 */
import { DirigoError } from '../../kernel/errors.ts';

export class ScimError extends DirigoError {
  readonly scimType: string | undefined;

  constructor(code: string, status: number, scimType: string | undefined, description: string, headers: Record<string, string> = {}) {
    super(code, status, description, headers);
    this.scimType = scimType;
  }
}

/** 400 invalidFilter: a filter that does not parse, or names what cannot be compared. */
export class InvalidFilter extends ScimError {
  constructor(description: string) {
    super('invalid_filter', 400, 'invalidFilter', description);
  }
}

/** 400 invalidValue: a query parameter SCIM defines, with a value it cannot take. */
export class InvalidScimValue extends ScimError {
  constructor(description: string) {
    super('invalid_value', 400, 'invalidValue', description);
  }
}

/** 501: SCIM here is read only (RFC 7644 §3.12: "Service provider does not support the request operation"). */
export class ReadOnly extends ScimError {
  constructor(method: string) {
    super('not_implemented', 501, undefined, `${method} is not supported: Dirigo's SCIM service is read only; change users and groups through /registry`, { allow: 'GET, HEAD' });
  }
}
