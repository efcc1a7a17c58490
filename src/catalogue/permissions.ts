/**
 * Catalogue permissions, POSIX-like:
 * - `CatalogueAdministrator` (a property of the token's group) may do anything.
 * - otherwise the object's Mode applies: the owner bits when the token's user is the Owner, else the
 *   group bits when the token's group is the OwnerGroup, else the other bits.
 * - read (r) guards the addressed object: listing a directory, its metadata values and searches below it
 *   need r on that directory; a file's attributes and metadata need r on the file. Ancestors are not
 *   walked (no x traversal check) and search results are not filtered per directory: a directory readable
 *   by a user exposes the metadata, counts and sizes of its whole subtree to that user.
 * - creating a directory or registering a file needs w on the nearest existing ancestor; setting
 *   metadata needs w on the object; removing needs w on the parent (or being the owner); a recursive
 *   removal, a Mode change and field definitions need the owner or an administrator as stated per route.
 * Token capability scopes (WLCG storage.read/modify/create:<path>) are checked on top, by path.
 */
import type { Principal } from '../auth/authenticate.ts';
import { Property } from '../registry/registry.ts';
import { InsufficientPrivileges, InvalidRequest } from '../server/errors.ts';

export const READ = 4;
export const WRITE = 2;

export interface Owned {
  owner: string;
  owner_group: string;
  mode: number;
}

export function isCatalogueAdmin(principal: Principal): boolean {
  return principal.properties.includes(Property.CatalogueAdministrator);
}

export function allowed(principal: Principal, obj: Owned, bit: number): boolean {
  if (isCatalogueAdmin(principal)) return true;
  const shift = obj.owner === principal.username ? 6 : obj.owner_group === principal.group ? 3 : 0;
  return ((obj.mode >> shift) & bit) !== 0;
}

/** @throws InsufficientPrivileges naming the path and the missing permission. */
export function requireAllowed(principal: Principal, obj: Owned, bit: number, path: string, action: string): void {
  if (!allowed(principal, obj, bit)) {
    throw new InsufficientPrivileges(`${principal.username} (group ${principal.group}) may not ${action}: no ${bit === READ ? 'read' : 'write'} permission on ${path}`);
  }
}

export function requireOwnerOrAdmin(principal: Principal, obj: Owned, path: string, action: string): void {
  if (!isCatalogueAdmin(principal) && obj.owner !== principal.username) {
    throw new InsufficientPrivileges(`only the owner of ${path} or a CatalogueAdministrator may ${action}`);
  }
}

export function requireAdmin(principal: Principal, action: string): void {
  if (!isCatalogueAdmin(principal)) throw new InsufficientPrivileges(`only a CatalogueAdministrator may ${action}`);
}

/** "0755", "755" or 493 → 493; undefined when absent. */
export function parseMode(value: unknown, what = 'Mode'): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0o777) return value;
  if (typeof value === 'string' && /^0?[0-7]{3}$/.test(value)) return parseInt(value, 8);
  throw new InvalidRequest(`${what}: ${JSON.stringify(value)} is not a mode (an integer 0–511 or an octal string such as "0755")`);
}
