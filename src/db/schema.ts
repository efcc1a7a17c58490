/**
 * The database as Kysely sees it: each domain declares its own tables next to its store and they are
 * joined here. Times are ISO 8601 UTC text on both dialects.
 */
import type { AuthTables } from '../auth/tables.ts';
import type { CatalogueTables } from '../catalogue/tables.ts';
import type { JobsTables } from '../jobs/tables.ts';
import type { RegistryTables } from '../registry/tables.ts';
import type { ClusterTables } from '../cluster/tables.ts';
import type { FederationTables } from '../federation/tables.ts';

export interface Database extends AuthTables, CatalogueTables, JobsTables, RegistryTables, ClusterTables, FederationTables {}
