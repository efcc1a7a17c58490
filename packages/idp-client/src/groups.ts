/** Reading a user's groups from token claims or a profile, and mapping them to local groups. */

/** A parsed AARC-G002 entitlement: urn:<namespace>:group:<group>[:<subgroup>...][:role=<role>][#<authority>]. */
export interface AarcEntitlement { namespace: string; path: string[]; role: string | null; authority: string | null }

export function parseAarcEntitlement(value: string): AarcEntitlement | null {
  const m = /^urn:(.+?):group:([^#]+?)(?::role=([^#:]+))?(?:#(.+))?$/.exec(value);
  if (!m) return null;
  const path = (m[2] as string).split(':').map((s) => decodeURIComponent(s)).filter(Boolean);
  if (path.length === 0) return null;
  return { namespace: m[1] as string, path, role: m[3] ?? null, authority: m[4] ?? null };
}

function asStrings(v: unknown): string[] {
  if (typeof v === 'string') return v.split(/\s+/).filter(Boolean);
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return [];
}

/**
 * Upstream groups named by claims, in this order: `wlcg.groups` (WLCG profile), `eduperson_entitlement`
 * in AARC-G002 syntax (`/vo/sub`, or `/vo/sub:role=<role>` for roles other than member), a `groups`
 * claim (Keycloak), and `wlcg.groups:<group>` scopes.
 * @example
 * extractUpstreamGroups({ 'wlcg.groups': ['/vo'], eduperson_entitlement: ['urn:mace:egi.eu:group:vo:sub:role=member#aai.egi.eu'] });
 * // → ['/vo', '/vo/sub']
 */
export function extractUpstreamGroups(...claimSets: Array<Record<string, unknown> | null | undefined>): string[] {
  const out = new Set<string>();
  for (const claims of claimSets) {
    if (!claims) continue;
    for (const g of asStrings(claims['wlcg.groups'])) out.add(g);
    for (const e of asStrings(claims.eduperson_entitlement)) {
      const parsed = parseAarcEntitlement(e);
      if (!parsed) continue;
      const path = `/${parsed.path.join('/')}`;
      out.add(parsed.role && parsed.role !== 'member' ? `${path}:role=${parsed.role}` : path);
    }
    for (const g of asStrings(claims.groups)) out.add(g);
    for (const s of asStrings(claims.scope)) if (s.startsWith('wlcg.groups:')) out.add(s.slice('wlcg.groups:'.length));
  }
  return [...out];
}

/**
 * Local groups for upstream ones. With a mapping, only mapped groups count (a value may name several
 * local groups); without one, upstream names are used as they are.
 * @example
 * mapGroups(['/vo', '/vo/prod'], { '/vo/prod': 'vo_production' }); // → ['vo_production']
 */
export function mapGroups(upstream: string[], mapping: Record<string, string | string[]> | null | undefined): string[] {
  if (!mapping) return [...upstream];
  const out = new Set<string>();
  for (const g of upstream) {
    const local = mapping[g];
    if (local === undefined) continue;
    for (const l of Array.isArray(local) ? local : [local]) out.add(l);
  }
  return [...out];
}
