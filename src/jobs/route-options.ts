/** What every /jobs route plugin is handed by jobsRoutes (routes.ts): one service, one store, one auth hook. */
import type { requireToken } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import type { JobsConfig } from './config-schema.ts';
import type { ServiceSandboxStore } from './sandbox-store.ts';
import type { JobsService } from './service.ts';

export interface JobRouteOptions {
  ctx: AppContext;
  config: JobsConfig;
  service: JobsService;
  store: ServiceSandboxStore;
  /** Authenticates the bearer token (a preHandler or onRequest hook). */
  auth: ReturnType<typeof requireToken>;
}

export const tags = ['Jobs'];
/** /workflows (flow/): its own tag, declared once in the document's tags (app/openapi.ts). */
export const workflowTags = ['Workflows'];
export const security = SECURITY.token;
