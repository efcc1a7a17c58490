/**
 * Who calls the registry API and what they may do. The registry sits below auth, so the composition root
 * passes in `authenticate`, which turns a request into a caller (auth's Principal, reduced).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InsufficientPrivileges } from '../../kernel/errors.ts';
import { Property, type Registry } from '../registry.ts';

export interface RegistryCaller {
  username: string;
  /** The properties of the token's group, empty when the token does not carry the group's rights. */
  properties: readonly string[];
}

export type Authenticate = (request: FastifyRequest, reply: FastifyReply) => Promise<RegistryCaller>;

export const actorOf = (caller: RegistryCaller) => `user:${caller.username}`;
export const isAdmin = (caller: RegistryCaller) => caller.properties.includes(Property.Admin);

/** @throws InsufficientPrivileges unless the caller's group has Admin. */
export function requireAdmin(caller: RegistryCaller, what: string): void {
  if (!isAdmin(caller)) throw new InsufficientPrivileges(`${caller.username} may not ${what}: only a group with the Admin property may`);
}

/** @throws InsufficientPrivileges unless the caller is Admin or a manager of `group`. */
export function requireManager(registry: Registry, caller: RegistryCaller, group: string, what: string): void {
  if (isAdmin(caller) || registry.isManager(caller.username, group)) return;
  throw new InsufficientPrivileges(`${caller.username} may not ${what}: only Admin or a manager of ${group} may`);
}
