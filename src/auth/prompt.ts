/**
 * OpenID Connect Core §3.1.2.1 authentication-request parameters that decide whether the user must sign
 * in again: `prompt`, `max_age`, `login_hint` and `id_token_hint`, with the §3.1.2.6 errors for
 * `prompt=none`. Dirigo asks for consent (the user picks the group of the token; only its own first-party
 * application is answered at once), so a `prompt=none` request whose user is signed in still needs an
 * interaction: `consent_required`.
 */
import type { AppContext } from '../kernel/context.ts';
import { DirigoError, InvalidRequest } from '../kernel/errors.ts';
import type { BrowserSession } from './sessions.ts';
import { readIdTokenHint } from './id-tokens.ts';

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);
const MAX_HINT = 256;

export interface PromptRequest {
  /** The interaction must show the login page unless the user signed in at or after this time (epoch ms). */
  signInAfter?: number | undefined;
  /** Prefills the login form. */
  loginHint?: string | undefined;
  /** prompt=consent: the consent page is shown even to a first-party client. */
  askConsent?: true | undefined;
}

/** §3.1.2.6 error codes, redirected to the client like the other authorization errors. */
function promptError(code: 'login_required' | 'consent_required' | 'interaction_required', description: string): DirigoError {
  return new DirigoError(code, 400, description);
}

/**
 * Checks the parameters and decides what the interaction must do.
 * @throws InvalidRequest for malformed values; login_required / consent_required for `prompt=none`.
 */
export async function promptDecision(ctx: AppContext, params: Record<string, string>, session: BrowserSession | undefined): Promise<PromptRequest> {
  const prompts = (params.prompt ?? '').split(' ').filter(Boolean);
  for (const p of prompts) if (!PROMPTS.has(p)) throw new InvalidRequest(`prompt '${p}' is not supported (none, login, consent, select_account)`);
  if (prompts.includes('none') && prompts.length > 1) throw new InvalidRequest('prompt=none cannot be combined with other values');
  let maxAge: number | undefined;
  if (params.max_age !== undefined) {
    if (!/^\d{1,9}$/.test(params.max_age)) throw new InvalidRequest('max_age must be a number of seconds');
    maxAge = Number(params.max_age);
  }
  if (params.login_hint !== undefined && params.login_hint.length > MAX_HINT) throw new InvalidRequest(`login_hint is longer than ${MAX_HINT} characters`);
  const hinted = params.id_token_hint !== undefined ? (await readIdTokenHint(ctx, params.id_token_hint))?.sub : undefined;
  if (params.id_token_hint !== undefined && hinted === undefined) throw new InvalidRequest('id_token_hint is not an ID token of this server');

  const now = Date.now();
  const authTime = session?.username && session.authTime ? Date.parse(session.authTime) : undefined;
  const signedIn = authTime !== undefined && (hinted === undefined || hinted === session!.username);
  // auth_time has whole seconds (§2): max_age compares at that resolution.
  const fresh = signedIn && (maxAge === undefined || Math.floor(now / 1000) - Math.floor(authTime! / 1000) <= maxAge);
  if (prompts.includes('none')) {
    if (!signedIn) throw promptError('login_required', hinted !== undefined ? 'the user of id_token_hint is not signed in' : 'the user is not signed in');
    if (!fresh) throw promptError('login_required', 'the sign-in is older than max_age');
    throw promptError('consent_required', 'the user must choose the group of the token');
  }
  const forceLogin = prompts.includes('login') || prompts.includes('select_account') || !fresh;
  return {
    // A sign-in that completes after this request satisfies it.
    ...(forceLogin ? { signInAfter: now } : {}),
    ...(prompts.includes('consent') ? { askConsent: true as const } : {}),
    loginHint: params.login_hint ?? hinted,
  };
}
