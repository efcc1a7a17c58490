/** Whether the signed-in group may manage sites and pilots (ban, drain, stop, revoke): the server decides, this only hides buttons. */
import { useEffect, useState } from 'react';
import { api, unwrap } from '../api.ts';
import { currentTokens } from '../session.ts';

const MANAGING = ['SiteManager', 'JobAdministrator'];

/** True when the token's group has SiteManager or JobAdministrator: the account says which properties each group has. */
export function useMayManage(): boolean {
  const [may, setMay] = useState(false);
  const group = currentTokens()?.group;
  useEffect(() => {
    void api
      .GET('/oauth2/account')
      .then((r) => setMay(unwrap(r).groups.some((g) => g.name === group && g.properties.some((p) => MANAGING.includes(p)))))
      .catch(() => setMay(false));
  }, [group]);
  return may;
}
