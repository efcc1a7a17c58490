/** GET /registry/audit: every registry change, newest first (Admin). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors, SECURITY } from '../../kernel/openapi.ts';
import type { RegistryAdmin } from '../admin.ts';
import { AuditList, AuditQuery } from '../api-schemas.ts';
import { requireAdmin, type Authenticate } from './access.ts';

export const auditRoutes: FastifyPluginAsyncTypebox<{ admin: RegistryAdmin; authenticate: Authenticate }> = async (app, { admin, authenticate }) => {
  app.get('/registry/audit', { schema: { tags: ['Registry'], security: SECURITY.token, operationId: 'listRegistryAudit', summary: 'The registry audit log: who changed what, when, before and after (Admin)', querystring: AuditQuery, response: { 200: AuditList, ...errors(400, 401, 403) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    requireAdmin(caller, 'read the registry audit log');
    const { target, actor, action, since, page = 1, per_page: perPage = 100 } = request.query;
    const { entries, total } = await admin.audit({ target, actor, action, since, offset: (page - 1) * perPage, limit: perPage });
    return { entries, total, page, perPage };
  });
};
