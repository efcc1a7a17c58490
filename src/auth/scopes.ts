/**
 * Scopes (RFC 6749 §3.3) with the WLCG token profile's vocabulary (WLCG Common JWT Profiles §3.2-3.3).
 * A token's rights are those its scopes name, as the consent page words them (docs/architecture.md
 * "Scopes and rights"):
 * - the group scope, `wlcg.groups` (the token's group) or `wlcg.groups:/<group>`, carries the rights of the
 *   token's group (its jobs, the catalogue as its permissions allow, the group's properties);
 * - capabilities, `compute.read|create|modify|cancel` and `storage.read|create|modify:/path`, each carry
 *   what they name; a token that has any is limited to them, with or without the group scope;
 * - the OpenID scopes and `wlcg` carry no right: such a token signs the user in to an application, which
 *   may read the user info, and answers 403 insufficient_scope everywhere else.
 */
import { InvalidScope } from '../kernel/errors.ts';

export const COMPUTE_SCOPES = ['compute.read', 'compute.create', 'compute.modify', 'compute.cancel'] as const;
export const STORAGE_CAPABILITIES = ['storage.read', 'storage.create', 'storage.modify'] as const;
/**
 * Plain scopes besides capabilities. `openid` asks for an ID token (OpenID Connect Core §3.1.2.1);
 * `offline_access` is accepted; refresh tokens are issued anyway. Only `wlcg.groups` carries rights.
 */
export const PLAIN_SCOPES = ['openid', 'wlcg', 'wlcg.groups', 'offline_access', 'profile', 'email'] as const;

/**
 * Scopes only a client's own token (client_credentials) may carry: they name a right of the client, not
 * of a user (`scim:read`: read users and groups through SCIM, docs/registry.md).
 */
export const CLIENT_SCOPES = ['scim:read'] as const;

export function isClientScope(scope: string): boolean {
  return (CLIENT_SCOPES as readonly string[]).includes(scope);
}

/** The group scope in its plain form: the rights of the token's group, whichever group that is. */
export const GROUP_RIGHTS_SCOPE = 'wlcg.groups';

/**
 * RFC 6749 §3.3 lets the server apply a default when the client asks for no scope: the group scope, as
 * flow A, the CLI and the web application ask for; the consent page lists it like any scope asked for.
 */
export const DEFAULT_SCOPE: readonly string[] = [GROUP_RIGHTS_SCOPE];

export const SCOPES_SUPPORTED: readonly string[] = [...PLAIN_SCOPES, ...COMPUTE_SCOPES, ...STORAGE_CAPABILITIES.map((s) => `${s}:/`), ...CLIENT_SCOPES];

/** WLCG Common JWT Profiles §3.2.1: `wlcg.groups:/<group>` asks for a token of that group. */
const GROUP_SCOPE = /^wlcg\.groups:\/([A-Za-z0-9_.-]{1,64})$/;

function isGroupScope(scope: string): boolean {
  return GROUP_SCOPE.test(scope);
}

/** `wlcg.groups` or `wlcg.groups:/<group>`: a scope that carries the rights of a group. */
export function isGroupRightsScope(scope: string): boolean {
  return scope === GROUP_RIGHTS_SCOPE || GROUP_SCOPE.test(scope);
}

/**
 * Whether `scopes` carry the rights of `group`: the plain group scope, or the one naming `group` (a
 * `wlcg.groups:/<other>` scope never reaches a token of another group: grantableScope refuses it).
 */
export function grantsGroupRights(scopes: readonly string[], group: string): boolean {
  return scopes.includes(GROUP_RIGHTS_SCOPE) || scopes.includes(`wlcg.groups:/${group}`);
}

/** The scope parameter of a token or authorization request, with the default when it is absent. */
export function requestedScope(scope: string | undefined): string[] {
  // RFC 6749 §3.1: a parameter sent without a value is treated as omitted.
  return scope === undefined || scope.trim() === '' ? [...DEFAULT_SCOPE] : parseScope(scope);
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

export function isCapability(scope: string): boolean {
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
    else if ((COMPUTE_SCOPES as readonly string[]).includes(raw) || (PLAIN_SCOPES as readonly string[]).includes(raw) || isClientScope(raw)) s = raw;
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
 * A token with the group scope and no capability has the group's rights, so any capability set is
 * narrower; a token with capabilities is limited to them, and dropping all of them would widen it; a token
 * with neither (sign-in only) can gain no right. The group scope's group may change (token exchange):
 * membership is checked where the group is chosen.
 */
export function isWithin(requested: readonly string[], granted: readonly string[]): boolean {
  const grantedCaps = granted.filter(isCapability);
  const requestedCaps = requested.filter(isCapability);
  // A group scope beside capabilities only names the group (the capabilities bound the token).
  const groupAllowed = granted.some(isGroupRightsScope) || requestedCaps.length > 0;
  for (const s of requested.filter((x) => !isCapability(x))) {
    if (isGroupRightsScope(s) ? !groupAllowed : !granted.includes(s)) return false;
  }
  const grantedGroup = granted.some(isGroupRightsScope);
  if (grantedCaps.length === 0) return requestedCaps.length === 0 || grantedGroup;
  if (requestedCaps.length === 0) return !requested.some(isGroupRightsScope);
  return requestedCaps.every((r) => grantedCaps.some((g) => (r.startsWith('storage.') ? storageCovers(g, r) : g === r)));
}

const WORDS: Record<string, string> = {
  openid: 'sign you in to the application',
  wlcg: 'receive a token in the WLCG profile format (no right by itself)',
  offline_access: 'keep access while you are away (refresh tokens)',
  profile: 'know your user name',
  email: 'know your e-mail address',
  'compute.read': 'see your jobs, their status, output and events',
  'compute.create': 'submit jobs in your name',
  'compute.modify': 'reschedule, delete, hold and release your jobs',
  'compute.cancel': 'kill your jobs',
  'storage.read': 'read file catalogue entries and their metadata',
  'storage.create': 'create file catalogue directories and register files',
  'storage.modify': 'change and remove file catalogue entries',
  'scim:read': 'read the users and groups of the registry (SCIM)',
};

/**
 * The consent page's words for a scope. `limited`: the request has capabilities too, which then bound
 * the group scope (see allowsCapability); otherwise the group scope's words say that the group's rights
 * follow, which the page lists (group-rights.ts).
 */
export function describeScope(scope: string, limited = false): string {
  const group = GROUP_SCOPE.exec(scope)?.[1] ?? (scope === GROUP_RIGHTS_SCOPE ? 'the group you choose below' : undefined);
  if (group !== undefined) {
    return limited ? `act as a member of ${group}, limited to the other rights listed here, and know your groups` : `act as a member of ${group}, with every right of the group listed below, and know your groups`;
  }
  const [name, path] = scope.split(/:(.*)/s, 2) as [string, string | undefined];
  // Metadata fields belong to the whole catalogue: storage.modify:/ alone may define and remove them.
  if (name === 'storage.modify' && path === '/') return `${WORDS[name]} anywhere, and define and remove metadata fields`;
  return `${WORDS[name] ?? name}${path ? ` under ${path}` : ''}`;
}
