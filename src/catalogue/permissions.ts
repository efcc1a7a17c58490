/**
 * Catalogue permissions, POSIX-like:
 * - `CatalogueAdministrator` (a property of the token's group) may do anything.
 * - otherwise the object's Mode applies: the owner bits when the token's user is the Owner, else the
 *   group bits when the token's group is the OwnerGroup, else the other bits.
 * - reaching an entry needs x (search) on every directory above it, as a POSIX path walk does; then read
 *   (r) guards the addressed object: listing a directory, its metadata values and searches below it need r
 *   on that directory; a file's attributes and metadata need r on the file. Search results are not
 *   filtered per directory: a directory readable by a user exposes the metadata, counts and sizes of its
 *   whole subtree to that user.
 * - a directory with the sticky bit (01000, as /tmp; the root has it by default) lets only an entry's
 *   owner, the directory's owner or an administrator remove what is in it, whoever may write to it.
 * - creating a directory or registering a file needs w on the nearest existing ancestor; setting
 *   metadata needs w on the object; removing needs w on the parent (or being the owner); a recursive
 *   removal, a Mode change and field definitions need the owner or an administrator as stated per route.
 * Token capability scopes (WLCG storage.read/modify/create:<path>) are checked on top, by path.
 */
import type { Principal } from '../auth/index.ts';
import { Property } from '../registry/index.ts';
import { InsufficientPrivileges, InvalidRequest } from '../kernel/errors.ts';

export const READ = 4;
export const WRITE = 2;
export const EXECUTE = 1;
/** POSIX S_ISVTX on a directory: entries may be removed only by their owner or the directory's. */
export const STICKY = 0o1000;

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
    const name = bit === READ ? 'read' : bit === WRITE ? 'write' : 'search (x)';
    throw new InsufficientPrivileges(`${principal.username} (group ${principal.group}) may not ${action}: no ${name} permission on ${path}`);
  }
}

/** Every directory above an entry (root first) must let the caller through (x), as a path walk does. */
export function requireTraversable(principal: Principal, ancestors: readonly (Owned & { path: string })[], action: string): void {
  for (const dir of ancestors) requireAllowed(principal, dir, EXECUTE, dir.path, action);
}

/**
 * Removing an entry from a sticky directory: its owner, the directory's owner or an administrator.
 * @throws InsufficientPrivileges otherwise.
 */
export function requireStickyRemoval(principal: Principal, parent: Owned & { path: string }, entry: Owned, path: string): void {
  if ((parent.mode & STICKY) === 0 || isCatalogueAdmin(principal)) return;
  if (entry.owner !== principal.username && parent.owner !== principal.username) {
    throw new InsufficientPrivileges(`${parent.path} is sticky: only the owner of ${path} or of ${parent.path} may remove it`);
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

/**
 * "0755", "755" or 493 → 493; the sticky bit only as an octal string ("1777"), since a decimal 755 is a
 * mistake far more often than a mode; undefined when absent.
 */
export function parseMode(value: unknown, what = 'Mode'): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0o777) return value;
  if (typeof value === 'string' && /^(0?[0-7]{3}|[01][0-7]{3})$/.test(value)) return parseInt(value, 8);
  throw new InvalidRequest(`${what}: ${JSON.stringify(value)} is not a mode (an integer 0–511 or an octal string such as "0755" or "1777")`);
}
