/**
 * What the viewer may do in the registry, for showing tabs and buttons: Admin (the token's group has the
 * Admin property) and the groups they manage. The server decides; this only hides what it would refuse.
 */
import { useCallback, useEffect, useState } from 'react';
import { api, unwrap } from '../api.ts';
import { useRights } from '../account/may-manage.ts';
import type { RegistryGroup } from './types.ts';

export interface RegistryRights {
  username: string | undefined;
  admin: boolean;
  /** The groups whose manager the viewer is. */
  manages: string[];
  /** Every group, as the viewer may see it (members only of those they manage, or all for Admin). */
  groups: RegistryGroup[];
  reload(): Promise<void>;
}

export function useRegistryRights(): RegistryRights {
  const { username, properties } = useRights();
  const [groups, setGroups] = useState<RegistryGroup[]>([]);
  const reload = useCallback(async () => {
    setGroups(unwrap(await api.GET('/registry/groups', { params: { query: { per_page: 1000 } } })).groups);
  }, []);
  useEffect(() => void reload().catch(() => setGroups([])), [reload, username]);
  const manages = username === undefined ? [] : groups.filter((g) => g.managers.includes(username)).map((g) => g.name);
  return { username, admin: properties.includes('Admin'), manages, groups, reload };
}
