/**
 * Server-rendered pages of the authorization server: login, consent, device verification and errors.
 * Plain HTML forms (no JavaScript), one inline stylesheet allowed by its hash in a strict
 * Content-Security-Policy, labelled fields, and a CSRF token in every form.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';

/**
 * The web application's look (Mantine's theme as web/src/main.tsx sets it: the same font stack, primary
 * blue shade 8, borders, 8-pixel radii, 36-pixel controls, a 56-pixel header), light or dark as the
 * system prefers, as the application follows it. Written out here: the pages load nothing from elsewhere.
 */
const STYLE = `:root{color-scheme:light dark;--body:#fff;--text:#000;--dimmed:#495057;--border:#ced4da;--control:#fff;--primary:#1971c2;--error:#c92a2a}
@media (prefers-color-scheme:dark){:root{--body:#242424;--text:#c9c9c9;--dimmed:#c9c9c9;--border:#424242;--control:#2e2e2e;--error:#ff8787}}
body{margin:0;font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--body);color:var(--text);-webkit-font-smoothing:antialiased}
header{height:56px;box-sizing:border-box;display:flex;align-items:center;padding:0 16px;border-bottom:1px solid var(--border)}
header span{font-size:18px;font-weight:800}
main{box-sizing:border-box;width:calc(100% - 2rem);max-width:30rem;margin:2rem auto;padding:32px;border:1px solid var(--border);border-radius:8px;box-shadow:0 1px 3px #0000000d,#0000000d 0 10px 15px -5px,#0000000a 0 7px 7px -5px}
@media (max-width:480px){main{padding:20px;margin:1rem auto}}
h1{font-size:26px;line-height:1.35;font-weight:700;margin:0 0 1rem}p{margin:0 0 .8rem}
label{display:block;margin:1rem 0 4px;font-size:14px;font-weight:500}
input,select{display:block;width:100%;box-sizing:border-box;height:36px;padding:0 12px;font:inherit;font-size:14px;color:var(--text);background:var(--control);border:1px solid var(--border);border-radius:8px}
input:focus,select:focus{border-color:var(--primary);outline:none}
button{font:inherit;font-size:14px;font-weight:600;height:36px;padding:0 18px;margin:1rem .5rem 0 0;border-radius:8px;border:1px solid transparent;background:var(--primary);color:#fff;cursor:pointer}
button.secondary{background:var(--control);border-color:var(--border);color:var(--text)}
button:focus-visible,input:focus-visible,select:focus-visible{outline:2px solid var(--primary);outline-offset:2px}
.aup{white-space:pre-wrap;max-height:20rem;overflow:auto;border:1px solid var(--border);border-radius:8px;padding:12px;font-size:14px}
.error{color:var(--error);font-weight:600}.code{font:700 1.6rem monospace;letter-spacing:.2rem;height:auto;padding:.4rem 12px}
ul{padding-left:1.2rem;margin:0 0 .8rem}hr{margin:1.5rem 0;border:0;border-top:1px solid var(--border)}small{color:var(--dimmed);font-size:14px;overflow-wrap:anywhere}`;

const STYLE_HASH = `sha256-${createHash('sha256').update(STYLE).digest('base64')}`;

/** HTML-escapes text and attribute values. */
export function esc(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export interface PageOptions {
  status?: number;
  /** Extra origins a form on this page may end up at (a consent form redirects to the client). */
  formTargets?: string[];
}

/** Sends a complete page with the security headers every page carries. */
export function sendPage(reply: FastifyReply, title: string, body: string, options: PageOptions = {}): FastifyReply {
  const formAction = ["'self'", ...(options.formTargets ?? [])].join(' ');
  return reply
    .code(options.status ?? 200)
    .type('text/html; charset=utf-8')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src '${STYLE_HASH}'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .send(
      `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
        `<title>${esc(title)} · Dirigo</title><style>${STYLE}</style></head>\n<body><header><span>Dirigo</span></header><main>\n<h1>${esc(title)}</h1>\n${body}\n</main></body></html>\n`,
    );
}

export function errorPage(reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  return sendPage(reply, title, `<p class="error" role="alert">${esc(message)}</p>`, { status });
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`;

export interface LoginView {
  interaction: string;
  csrf: string;
  clientName: string;
  certificate: { username: string; dn: string } | undefined;
  providers: readonly { id: string; label: string }[];
  error?: string;
  username?: string;
}

export function loginBody(v: LoginView): string {
  const parts = [`<p><strong>${esc(v.clientName)}</strong> asks to act for you. Sign in to continue.</p>`];
  if (v.error) parts.push(`<p class="error" role="alert">${esc(v.error)}</p>`);
  if (v.certificate) {
    parts.push(
      `<form method="post" action="/oauth2/login/certificate">${hidden('csrf', v.csrf)}${hidden('interaction', v.interaction)}` +
        `<p>Your browser presented the certificate <small>${esc(v.certificate.dn)}</small>.</p>` +
        `<button type="submit">Continue as ${esc(v.certificate.username)}</button></form><hr>`,
    );
  }
  parts.push(
    `<form method="post" action="/oauth2/login">${hidden('csrf', v.csrf)}${hidden('interaction', v.interaction)}` +
      `<label for="username">User name</label><input id="username" name="username" autocomplete="username" required value="${esc(v.username ?? '')}">` +
      `<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>` +
      `<button type="submit">Sign in</button></form>`,
  );
  for (const p of v.providers) {
    parts.push(
      `<hr><form method="post" action="/oauth2/login/${esc(p.id)}">${hidden('csrf', v.csrf)}${hidden('interaction', v.interaction)}` +
        `<button type="submit" class="secondary">Sign in with ${esc(p.label)}</button></form>`,
    );
  }
  return parts.join('\n');
}

export interface ConsentView {
  interaction: string;
  csrf: string;
  clientName: string;
  clientId: string;
  username: string;
  scopes: { scope: string; text: string }[];
  /** The rights the group scope carries, for each group offered; absent when no scope carries them. */
  groupRights?: { group: string; rights: string[] }[] | undefined;
  groups: readonly string[];
  setups: readonly string[];
  group?: string;
  setup?: string;
  device?: boolean;
}

export function consentBody(v: ConsentView): string {
  const options = (values: readonly string[], selected?: string) =>
    values.map((x) => `<option value="${esc(x)}"${x === selected ? ' selected' : ''}>${esc(x)}</option>`).join('');
  const asks = v.scopes.length
    ? v.scopes.map((s) => `<li>${esc(s.text)} <small>(${esc(s.scope)})</small></li>`).join('')
    : '<li>nothing: the token it gets carries no right</li>';
  const rights = (v.groupRights ?? [])
    .map((g) => `<li>as a member of <strong>${esc(g.group)}</strong>:<ul>${g.rights.map((r) => `<li>${esc(r)}</li>`).join('')}</ul></li>`)
    .join('');
  return [
    `<p><strong>${esc(v.clientName)}</strong> <small>(${esc(v.clientId)})</small> asks to act for <strong>${esc(v.username)}</strong>${v.device ? ' on a device' : ''}. It asks to:</p>`,
    `<ul>${asks}</ul>`,
    rights ? `<p>The rights of the group it asks for:</p><ul class="group-rights">${rights}</ul>` : '',
    `<form method="post" action="/oauth2/consent">${hidden('csrf', v.csrf)}${hidden('interaction', v.interaction)}`,
    `<label for="group">Group</label><select id="group" name="group">${options(v.groups, v.group)}</select>`,
    `<label for="setup">Setup</label><select id="setup" name="setup">${options(v.setups, v.setup)}</select>`,
    `<button type="submit" name="decision" value="allow">Allow</button>`,
    `<button type="submit" name="decision" value="deny" class="secondary">Deny</button></form>`,
    `<p><small>Signed in as ${esc(v.username)}.</small></p>`,
  ].join('\n');
}

export function deviceEntryBody(csrf: string, userCode: string | undefined, error?: string): string {
  return [
    '<p>Enter the code shown on your device.</p>',
    error ? `<p class="error" role="alert">${esc(error)}</p>` : '',
    `<form method="post" action="/oauth2/device/verify">${hidden('csrf', csrf)}`,
    `<label for="user_code">Code</label><input id="user_code" name="user_code" class="code" autocomplete="off" autocapitalize="characters" required placeholder="XXXX-XXXX" value="${esc(userCode ?? '')}">`,
    '<button type="submit">Continue</button></form>',
  ].join('\n');
}

export interface AupView {
  interaction: string;
  csrf: string;
  username: string;
  version: string;
  text: string;
  error?: string;
}

/** The acceptable-use policy, shown before consent until the user accepts its current version. */
export function aupBody(v: AupView): string {
  return [
    `<p>Before <strong>${esc(v.username)}</strong> gets tokens, read and accept the acceptable-use policy (version ${esc(v.version)}).</p>`,
    v.error ? `<p class="error" role="alert">${esc(v.error)}</p>` : '',
    `<div class="aup" tabindex="0" aria-label="Acceptable-use policy">${esc(v.text)}</div>`,
    `<form method="post" action="/oauth2/aup">${hidden('csrf', v.csrf)}${hidden('interaction', v.interaction)}${hidden('version', v.version)}`,
    '<button type="submit">Accept</button></form>',
  ].join('\n');
}
