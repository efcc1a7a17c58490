/**
 * The pages' routes as the OpenAPI document shows them: the form bodies
 * (application/x-www-form-urlencoded) the pages of pages.ts post, and the route schemas of the
 * interaction pages. The routes read the fields themselves, so that a missing or wrong one is answered
 * with a page a person can read; every form carries the session's CSRF token.
 */
import { Type } from 'typebox';
import { SECURITY } from '../kernel/openapi.ts';
import { BODY_ERRORS, oauthError, page, pageOrError, redirect, RetryAfter, type Answers } from './api-answers.ts';

const field = (description: string) => Type.Optional(Type.String({ description }));

const csrf = { csrf: Type.String({ description: 'The CSRF token of the browser session, from the page' }) };
const interaction = { ...csrf, interaction: Type.String({ description: 'The id of the pending interaction, from the page' }) };

export const PasswordLoginForm = Type.Object({
  ...interaction,
  username: Type.String({ description: 'The user name' }),
  password: Type.String({ description: 'The password', format: 'password' }),
});

/** The certificate of the TLS handshake, or an upstream provider, says who the user is. */
export const InteractionForm = Type.Object(interaction);

export const ConsentForm = Type.Object({
  ...interaction,
  decision: Type.Union([Type.Literal('allow'), Type.Literal('deny')], { description: 'The button pressed' }),
  group: field('With allow: the group of the token'),
  setup: field('With allow: the setup of the token'),
});

export const AupForm = Type.Object({
  ...interaction,
  version: Type.String({ description: 'The AUP version the page showed' }),
});

export const UserCodeForm = Type.Object({ ...csrf, user_code: Type.String({ description: 'The code the device shows (RFC 8628 §3.3)' }) });

const logoutField = (description: string) => Type.Optional(Type.String({ maxLength: 8192, description }));

/** OpenID Connect RP-Initiated Logout 1.0 §2 (in the query or, posted, in the form). */
export const LogoutParameters = {
  id_token_hint: logoutField('An ID token this server issued to the client; with it the sign-out needs no confirmation'),
  client_id: logoutField('The client asking; must be the audience of id_token_hint'),
  post_logout_redirect_uri: logoutField('Where the browser goes afterwards; registered for the client, exactly (§3)'),
  state: logoutField('Returned unchanged with the redirect'),
};

export const LogoutForm = Type.Object(LogoutParameters);

/** The confirmation page's form: the request again, with the session's CSRF token. */
export const LogoutConfirmForm = Type.Object({ ...csrf, ...LogoutParameters });

/** Validated as any form (strings, repeated fields as arrays); the fields above are for the document. */
const Form = Type.Object({}, { additionalProperties: Type.Union([Type.String(), Type.Array(Type.String())]) });
const tags = ['OAuth 2.0 pages'];
const FORM = 'application/x-www-form-urlencoded';

/** What every form post may answer: the next page, or the refusals before and after the CSRF check. */
const formAnswers = (next: string): Answers => ({
  ...BODY_ERRORS,
  303: redirect(next),
  400: pageOrError('The interaction expired or is unknown (a page), or the form could not be read (JSON)'),
  403: page('The form\'s CSRF token is missing or wrong, or no group of the user may hold what is asked'),
});

/** showInteraction's page: the login page while nobody is signed in, else the consent page. */
const INTERACTION_PAGE = 'The login page, or the consent page once signed in';

// The route schemas of interaction-routes.ts, one per route.

export const SHOW_INTERACTION = {
  operationId: 'showInteraction',
  tags,
  summary: 'Login or consent page of a pending authorization',
  security: SECURITY.none,
  params: Type.Object({ id: Type.String({ maxLength: 64, description: 'The interaction id the authorization or device endpoint redirected to' }) }),
  documented: {
    responses: {
      200: page(INTERACTION_PAGE),
      303: redirect("The service's own web application, for a signed-in member of the group it names: back to it with the code, without a consent page"),
      400: pageOrError('The interaction expired or belongs to another browser (a page), or the id is too long (JSON)'),
      403: page('No group of the user may hold what the client asks for'),
    },
  },
};

export const PASSWORD_LOGIN = {
  operationId: 'submitPasswordLogin',
  tags,
  summary: 'Password login form',
  security: SECURITY.none,
  body: Form,
  documented: {
    body: { [FORM]: PasswordLoginForm },
    responses: {
      ...formAnswers('Signed in: back to the interaction page'),
      200: page(`${INTERACTION_PAGE}, when the browser was already signed in`),
      401: page('Wrong user name or password: the login page again, with the error'),
      429: page('Too many failed attempts: the login page again, with the error', { 'Retry-After': RetryAfter }),
    },
  },
};

export const CERTIFICATE_LOGIN = {
  operationId: 'submitCertificateLogin',
  tags,
  summary: 'Login with the TLS client certificate',
  security: SECURITY.certificate,
  body: Form,
  documented: {
    body: { [FORM]: InteractionForm },
    responses: {
      ...formAnswers('Signed in: back to the interaction page'),
      200: page(`${INTERACTION_PAGE}, when the browser was already signed in`),
      401: page('No certificate of a registered user: the login page again, with the error'),
    },
  },
};

export const PROVIDER_LOGIN = {
  operationId: 'startProviderLogin',
  tags,
  summary: 'Login through an upstream identity provider',
  security: SECURITY.none,
  params: Type.Object({ provider: Type.String({ description: 'The provider\'s name (identityProviders[].name)' }) }),
  body: Form,
  documented: {
    body: { [FORM]: InteractionForm },
    responses: {
      ...formAnswers('To the provider\'s authorization endpoint (RFC 6749 §4.1.1)'),
      404: page('No sign-in method of this name'),
      502: page('The provider cannot be reached'),
    },
  },
};

export const CONSENT = {
  operationId: 'submitConsent',
  tags,
  summary: 'Consent form: allow or deny',
  security: SECURITY.none,
  body: Form,
  documented: {
    body: { [FORM]: ConsentForm },
    responses: {
      ...formAnswers('To the client\'s redirect URI with code, state and iss, or error=access_denied (RFC 6749 §4.1.2, RFC 9207)'),
      200: page(`A device's outcome (authorized or denied); or ${INTERACTION_PAGE.toLowerCase()}, when the sign-in must be renewed`),
      400: pageOrError('The interaction expired or was answered, the group or setup is not allowed, the device code expired (a page); or the form could not be read (JSON)'),
    },
  },
};

export const DEVICE_VERIFICATION = {
  operationId: 'showDeviceVerification',
  tags,
  summary: 'Device verification page (RFC 8628 §3.3)',
  security: SECURITY.none,
  querystring: Type.Object({ user_code: Type.Optional(Type.String({ maxLength: 32, description: 'Fills in the code (verification_uri_complete, §3.3.1)' })) }),
  documented: {
    responses: {
      200: page('The form to enter the code'),
      400: oauthError('invalid_request: user_code is longer than 32 characters, or the URL cannot be read'),
    },
  },
};

export const USER_CODE = {
  operationId: 'submitUserCode',
  tags,
  summary: 'Device code entry form (RFC 8628 §3.3)',
  security: SECURITY.none,
  body: Form,
  documented: {
    body: { [FORM]: UserCodeForm },
    responses: {
      ...formAnswers('To the login or consent page of the device\'s request'),
      400: pageOrError('The code is unknown, expired or used: the form again, with the error (a page); or the form could not be read (JSON)'),
      403: page('The form\'s CSRF token is missing or wrong'),
      429: page('Too many wrong codes: the form again, with the error', { 'Retry-After': RetryAfter }),
    },
  },
};

export const AUP_ACCEPT = {
  operationId: 'submitAupAcceptance',
  tags,
  summary: 'Accept the acceptable-use policy shown before consent (docs/registry.md "AUP")',
  security: SECURITY.none,
  body: Form,
  documented: {
    body: { [FORM]: AupForm },
    responses: {
      ...formAnswers('Accepted: back to the interaction page'),
      200: page(`${INTERACTION_PAGE}, or the AUP page again when its version changed meanwhile`),
    },
  },
};
