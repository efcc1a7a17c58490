/** The registry API's answers, as the generated client types them (src/registry/api-schemas.ts). */
import type { operations } from '@dirigo/client/schema';

type Json<O extends keyof operations, S extends number> = operations[O]['responses'] extends Record<S, { content: { 'application/json': infer T } }> ? T : never;

export type RegistryUser = Json<'getRegistryUser', 200>;
export type RegistryGroup = Json<'getRegistryGroup', 200>;
export type UserList = Json<'listRegistryUsers', 200>;
export type AuditEntry = Json<'listRegistryAudit', 200>['entries'][number];
export type UserStatusFilter = NonNullable<NonNullable<operations['listRegistryUsers']['parameters']['query']>['status']>;
