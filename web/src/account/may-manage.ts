/** What the signed-in group may do, for showing buttons: the server decides, this only hides buttons. */
import { useEffect, useState } from 'react';
import { api, unwrap } from '../api.ts';
import { currentTokens } from '../session.ts';

const MANAGING = ['SiteManager', 'JobAdministrator'];

export interface Rights {
  username: string | undefined;
  /** The token's group. */
  group: string | undefined;
  /** The properties of the token's group (JobAdministrator, SiteManager, …). */
  properties: readonly string[];
}

/** Who is signed in and the properties of the token's group, as the account says. */
export function useRights(): Rights {
  const [rights, setRights] = useState<Rights>({ username: undefined, group: undefined, properties: [] });
  const group = currentTokens()?.group;
  useEffect(() => {
    void api
      .GET('/oauth2/account')
      .then((r) => {
        const account = unwrap(r);
        setRights({ username: account.username, group, properties: account.groups.find((g) => g.name === group)?.properties ?? [] });
      })
      .catch(() => setRights({ username: undefined, group: undefined, properties: [] }));
  }, [group]);
  return rights;
}

/** True when the token's group has SiteManager or JobAdministrator (ban, drain, stop, revoke). */
export function useMayManage(): boolean {
  return useRights().properties.some((p) => MANAGING.includes(p));
}

/**
 * Whether the user may act on jobs owned by `owner` in `ownerGroup`, as the server decides
 * (src/jobs/privileges.ts canKillJob): their own, their group's with JobSharing, or any with JobAdministrator.
 */
export function useMayActOn(owner: string | undefined, ownerGroup: string | undefined): boolean {
  const { username, group, properties } = useRights();
  if (owner !== undefined && owner === username) return true;
  if (properties.includes('JobSharing') && ownerGroup !== undefined && ownerGroup === group) return true;
  return properties.includes('JobAdministrator');
}
