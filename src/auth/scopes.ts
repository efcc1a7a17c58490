/**
 * Scopes (RFC 6749 §3.3) with the WLCG token profile's capabilities (WLCG Common JWT Profiles §3.3):
 * `compute.read|create|modify|cancel` and `storage.read|create|modify:/path`. A token with capability
 * scopes is limited to them (see requireCapability in authenticate.ts); a token without any carries the
 * rights of its group. Capabilities only ever restrict group rights, so no scope widens what a user may do.
 */
import { InvalidScope } from '../kernel/errors.ts';

export const COMPUTE_SCOPES = ['compute.read', 'compute.create', 'compute.modify', 'compute.cancel'] as const;
export const STORAGE_CAPABILITIES = ['storage.read', 'storage.create', 'storage.modify'] as const;
/**
 * Plain scopes besides capabilities. `openid` asks for an ID token (OpenID Connect Core §3.1.2.1);
 * `offline_access` is accepted; refresh tokens are issued anyway.
 */
export const PLAIN_SCOPES = ['openid', 'wlcg', 'wlcg.groups', 'offline_access', 'profile', 'email'] as const;

export const SCOPES_SUPPORTED: readonly string[] = [...PLAIN_SCOPES, ...COMPUTE_SCOPES, ...STORAGE_CAPABILITIES.map((s) => `${s}:/`)];

/** WLCG Common JWT Profiles §3.2.1: `wlcg.groups:/<group>` asks for a token of that group. */
const GROUP_SCOPE = /^wlcg\.groups:\/([A-Za-z0-9_.-]{1,64})$/;

function isGroupScope(scope: string): boolean {
  return GROUP_SCOPE.test(scope);
}

/**
 * The group named by `wlcg.groups:/<group>` scopes, if any.
 * @throws InvalidScope when they name more than one group (a token is for one group).
 */
export function requestedGroup(scopes: readonly string[]): string | undefined {
  const groups = new Set(scopes.map((s) => GROUP_SCOPE.exec(s)?.[1]).filter((g): g is string => g !== undefined));
  if (groups.size > 1) throw new InvalidScope(`the scope names several groups (${[...groups].join(', ')}); a token is for one group`);
  return groups.values().next().value;
}

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

function isCapability(scope: string): boolean {
  return scope.startsWith('compute.') || scope.startsWith('storage.');
}

/** `storage.read:/a/b/` → `storage.read:/a/b`; throws for a path with `.`/`..`/empty segments. */
function normaliseStorage(scope: string): string {
  const colon = scope.indexOf(':');
  const name = colon === -1 ? scope : scope.slice(0, colon);
  const path = colon === -1 ? '/' : scope.slice(colon + 1);
  if (!(STORAGE_CAPABILITIES as readonly string[]).includes(name)) throw new InvalidScope(`unknown scope '${scope}'`);
  if (!path.startsWith('/')) throw new InvalidScope(`the path of '${scope}' must be absolute`);
  const segments = path.split('/').slice(1);
  if (path !== '/' && path.endsWith('/')) segments.pop();
  if (path !== '/' && segments.some((s) => s === '' || s === '.' || s === '..')) throw new InvalidScope(`the path of '${scope}' has empty, '.' or '..' segments`);
  return `${name}:${path === '/' ? '/' : `/${segments.join('/')}`}`;
}

/**
 * Parses and validates a `scope` parameter: known scopes only, capabilities normalised, duplicates dropped.
 * @throws InvalidScope naming the offending scope.
 */
export function parseScope(scope: string | undefined): string[] {
  if (scope === undefined) return [];
  const out: string[] = [];
  for (const raw of scope.split(' ')) {
    if (raw === '') continue;
    if (!SCOPE_TOKEN.test(raw)) throw new InvalidScope(`'${raw}' is not a valid scope token (RFC 6749 §3.3)`);
    let s: string;
    if (raw.startsWith('storage.')) s = normaliseStorage(raw);
    else if (isGroupScope(raw)) s = raw;
    else if ((COMPUTE_SCOPES as readonly string[]).includes(raw) || (PLAIN_SCOPES as readonly string[]).includes(raw)) s = raw;
    else throw new InvalidScope(`unknown scope '${raw}'`);
    if (!out.includes(s)) out.push(s);
  }
  return out;
}

function storageCovers(granted: string, requested: string): boolean {
  const [gName, gPath = '/'] = granted.split(/:(.*)/s, 2) as [string, string | undefined];
  const [rName, rPath = '/'] = requested.split(/:(.*)/s, 2) as [string, string | undefined];
  if (gName !== rName) return false;
  return gPath === '/' || rPath === gPath || rPath.startsWith(`${gPath}/`);
}

/**
 * Whether `requested` asks for no more than `granted` (refresh down-scoping, RFC 6749 §6; token exchange).
 * Without capabilities a token has the group's full rights, so any capability set is narrower; with
 * capabilities, each requested one must be covered and dropping all of them would widen the token.
 */
export function isWithin(requested: readonly string[], granted: readonly string[]): boolean {
  const grantedCaps = granted.filter(isCapability);
  const requestedCaps = requested.filter(isCapability);
  // Group scopes select the token's group; membership is checked where the group is chosen.
  for (const s of requested.filter((x) => !isCapability(x) && !isGroupScope(x))) if (!granted.includes(s)) return false;
  if (grantedCaps.length === 0) return true;
  if (requestedCaps.length === 0) return false;
  return requestedCaps.every((r) => grantedCaps.some((g) => (r.startsWith('storage.') ? storageCovers(g, r) : g === r)));
}

/** Human descriptions for the consent page. */
export function describeScope(scope: string): string {
  const group = GROUP_SCOPE.exec(scope)?.[1];
  if (group) return `act as a member of ${group}`;
  const [name, path] = scope.split(/:(.*)/s, 2) as [string, string | undefined];
  const text: Record<string, string> = {
    openid: 'sign you in to the application',
    wlcg: 'a WLCG-profile token',
    'wlcg.groups': 'your group membership',
    offline_access: 'access while you are away (refresh tokens)',
    profile: 'your user name',
    email: 'your e-mail address',
    'compute.read': 'read your jobs',
    'compute.create': 'submit jobs',
    'compute.modify': 'change your jobs',
    'compute.cancel': 'kill your jobs',
    'storage.read': 'read catalogue entries',
    'storage.create': 'create catalogue entries',
    'storage.modify': 'change catalogue entries',
  };
  return `${text[name] ?? name}${path ? ` under ${path}` : ''}`;
}
