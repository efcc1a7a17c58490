/**
 * What the group scope (`wlcg.groups`, scopes.ts) lets an application do, in the consent page's words:
 * the rights every member has, then those the group's properties add (as src/jobs/privileges.ts and
 * src/catalogue/permissions.ts enforce them).
 */
import type { AppContext } from '../kernel/context.ts';
import { Property } from '../registry/index.ts';

const PROPERTY_RIGHTS: Record<string, (group: string) => string> = {
  [Property.JobSharing]: (group) => `see and kill the jobs other members of ${group} submitted in ${group}`,
  [Property.JobMonitor]: () => 'see every user\'s jobs',
  [Property.JobAdministrator]: () => 'see, kill, reschedule and delete every user\'s jobs',
  [Property.CatalogueAdministrator]: () => 'read and write anywhere in the file catalogue, and define and remove metadata fields',
  [Property.SiteManager]: () => 'ban and unban sites and their resources',
  [Property.Pilot]: () => 'act as a job agent: take waiting jobs and run them',
  [Property.Admin]: () => 'administer the registry: users, groups, memberships, and read its audit log',
};

/** The rights a token of `username` in `group` holds through the group scope. */
export function groupRights(ctx: AppContext, username: string, group: string): string[] {
  const rights = [
    'submit jobs in your name; see, reschedule, delete and kill your jobs',
    `read and write the file catalogue where its permissions let ${username} (group ${group})`,
    'see your account, its sign-ins and grants, and end them',
  ];
  for (const property of ctx.registry.properties(group)) {
    const words = PROPERTY_RIGHTS[property];
    if (words) rights.push(words(group));
  }
  return rights;
}
