/**
 * What a token may say: the one scope check that every grant runs before it issues a token (flow A,
 * authorization code and device consent, refresh, token exchange).
 *
 * WLCG storage services trust the capabilities in a token alone (WLCG Common JWT Profiles §3.3), so
 * the issuer decides which `storage.*` and `compute.*` capabilities a user of a group may hold, by a
 * configured policy, as INDIGO IAM's scope policies do. Paths in a policy may use `{username}` and
 * `{group}`; a capability is granted when a rule of the user's group names it for that path or above.
 */
import { Type, type Static } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import { InvalidScope } from '../kernel/errors.ts';
import { isCapability, isClientScope, isGroupRightsScope, parseScope, requestedGroup } from './scopes.ts';

const CAPABILITY_PATTERN = '^(compute\\.(read|create|modify|cancel)|storage\\.(read|create|modify):/[^\\s]*)$';

export const CapabilityRuleSchema = Type.Object(
  {
    /** Groups the rule applies to; `*` for every group. */
    groups: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { default: [] }),
    /** Or: groups having one of these properties (e.g. CatalogueAdministrator). */
    properties: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { default: [] }),
    /** Capabilities granted, e.g. `storage.modify:/home/{username}`. */
    scopes: Type.Array(Type.String({ pattern: CAPABILITY_PATTERN }), { minItems: 1 }),
  },
  { additionalProperties: false },
);

export type CapabilityRule = Static<typeof CapabilityRuleSchema>;

/**
 * The documented default: every member may read the whole namespace and submit and manage jobs, and
 * write only below `/home/<username>`; groups with CatalogueAdministrator may write everywhere.
 */
export const DEFAULT_CAPABILITY_POLICY: CapabilityRule[] = [
  {
    groups: ['*'],
    properties: [],
    scopes: ['compute.read', 'compute.create', 'compute.modify', 'compute.cancel', 'storage.read:/', 'storage.create:/home/{username}', 'storage.modify:/home/{username}'],
  },
  { groups: [], properties: ['CatalogueAdministrator'], scopes: ['storage.create:/', 'storage.modify:/'] },
];

/** `storage.read:/a` covers `storage.read:/a` and `storage.read:/a/b`; compute capabilities match exactly. */
function covers(granted: string, requested: string): boolean {
  if (!granted.startsWith('storage.')) return granted === requested;
  const [gName, gPath] = granted.split(/:(.*)/s, 2) as [string, string];
  const [rName, rPath] = requested.split(/:(.*)/s, 2) as [string, string];
  return gName === rName && (gPath === '/' || rPath === gPath || rPath.startsWith(`${gPath}/`));
}

/** The capabilities the policy gives `username` in `group`, placeholders filled and paths normalised. */
export function allowedCapabilities(ctx: AppContext, username: string, group: string): string[] {
  const properties = ctx.registry.properties(group);
  const out: string[] = [];
  for (const rule of ctx.config.oauth.capabilityPolicy) {
    const applies = rule.groups.includes('*') || rule.groups.includes(group) || rule.properties.some((p) => properties.includes(p));
    if (!applies) continue;
    for (const s of rule.scopes) out.push(...parseScope(s.replaceAll('{username}', username).replaceAll('{group}', group)));
  }
  return out;
}

/**
 * Validates `scope` for a token of `username` in `group`: known scopes only (RFC 6749 §3.3), paths
 * normalised, a `wlcg.groups:/<g>` scope only for the token's own group, no client-only scope
 * (scopes.ts CLIENT_SCOPES), and every capability allowed by the policy.
 * @returns the scopes to put in the token.
 * @throws InvalidScope naming the first scope that cannot be granted.
 */
export function grantableScope(ctx: AppContext, username: string, group: string, scope: string | readonly string[] | undefined): string[] {
  const scopes = typeof scope === 'string' || scope === undefined ? parseScope(scope) : parseScope(scope.join(' '));
  const named = requestedGroup(scopes);
  if (named !== undefined && named !== group) throw new InvalidScope(`the scope asks for group '${named}' but the token is for '${group}'`);
  if (!ctx.registry.isMember(username, group)) throw new InvalidScope(`${username} is not a member of group '${group}'`);
  const clientOnly = scopes.find(isClientScope);
  if (clientOnly !== undefined) throw new InvalidScope(`'${clientOnly}' is for a client's own token (client_credentials), not for a user's`);
  const capabilities = scopes.filter(isCapability);
  // The policy is read only when capabilities are asked for: most tokens carry their group's rights alone.
  if (capabilities.length === 0) return scopes;
  const allowed = allowedCapabilities(ctx, username, group);
  for (const s of capabilities) {
    if (!allowed.some((a) => covers(a, s))) throw new InvalidScope(`'${s}' is not granted to members of ${group} (capability policy)`);
  }
  return scopes;
}

/**
 * Validates `scope` for a client's own token (client_credentials, RFC 6749 §4.4): known scopes only, and
 * each covered by what the client registered (`clients[].scopes`). No scope asked: the registered ones
 * (RFC 6749 §3.3 lets the server apply a default).
 * @throws InvalidScope naming the first scope that cannot be granted.
 */
export function grantableClientScope(client: { clientId: string; scopes: readonly string[] }, scope: string | undefined): string[] {
  const registered = parseScope(client.scopes.join(' '));
  const scopes = scope === undefined ? registered : parseScope(scope);
  for (const s of scopes) {
    if (!registered.some((r) => covers(r, s))) throw new InvalidScope(`'${s}' is not registered for client ${client.clientId}`);
  }
  return scopes;
}

/**
 * A dynamically registered client asks only for the plain scopes it registered (RFC 7591 §2 `scope`);
 * capabilities and group scopes still go through the capability policy and membership checks.
 * @throws InvalidScope naming the first scope the client did not register.
 */
export function checkRegisteredScope(client: { clientId: string; registration?: { metadata: { scope?: string } } | undefined }, scopes: readonly string[]): void {
  const registered = client.registration?.metadata.scope;
  if (registered === undefined) return;
  const allowed = registered.split(' ');
  for (const s of scopes) {
    if (isCapability(s) || isGroupRightsScope(s)) continue;
    if (!allowed.includes(s)) throw new InvalidScope(`'${s}' is not among the scopes client ${client.clientId} registered`);
  }
}
