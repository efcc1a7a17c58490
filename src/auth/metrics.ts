/** Token and sign-in metrics of this instance. */
import { Counter } from '../kernel/observability.ts';

export const tokensIssued = new Counter({
  name: 'dirigo_oauth_tokens_issued_total',
  help: 'Token responses issued by the token endpoint, by grant type',
  labelNames: ['grant'],
  registers: [],
});

export const tokenRefusals = new Counter({
  name: 'dirigo_oauth_token_refusals_total',
  help: 'Token requests refused, by OAuth 2.0 error code (RFC 6749 §5.2 and extensions)',
  labelNames: ['error'],
  registers: [],
});

export const loginFailures = new Counter({
  name: 'dirigo_login_failures_total',
  help: 'Failed sign-ins on the interactive forms (password: wrong name or password; device_code: wrong user code)',
  labelNames: ['form'],
  registers: [],
});

export const loginLockouts = new Counter({
  name: 'dirigo_login_lockouts_total',
  help: 'Sign-in attempts refused because the user name or address is locked out after too many failures',
  labelNames: ['form'],
  registers: [],
});

export const authMetrics = [tokensIssued, tokenRefusals, loginFailures, loginLockouts];
