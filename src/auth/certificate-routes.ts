/**
 * Flow A's lists (README "Tokens from a certificate"): the groups and setups the certificate of the TLS
 * handshake may ask tokens for.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { Type } from 'typebox';
import { certificateUser } from './client-certificate.ts';
import { BAD_URL, oauthError } from './api-answers.ts';

const tags = ['OAuth 2.0'];

export const certificateRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const certificateRefused = oauthError('invalid_client: no client certificate, a rejected one, or one of no registered user');
  const listOf = (name: string) => Type.Object({ [name]: Type.Array(Type.String()) });
  app.get(
    '/oauth2/groups',
    {
      schema: {
        operationId: 'listCertificateGroups',
        tags,
        summary: 'Groups the presented certificate may ask tokens for',
        security: SECURITY.certificate,
        response: { 200: listOf('groups') },
        documented: { responses: { ...BAD_URL, 401: certificateRefused } },
      },
    },
    async (request) => ({ groups: [...certificateUser(ctx, request).user.groups] }),
  );

  app.get(
    '/oauth2/setups',
    {
      schema: {
        operationId: 'listCertificateSetups',
        tags,
        summary: 'Setups the presented certificate may ask tokens for',
        security: SECURITY.certificate,
        response: { 200: listOf('setups') },
        documented: { responses: { ...BAD_URL, 401: certificateRefused } },
      },
    },
    async (request) => {
      certificateUser(ctx, request);
      return { setups: [...ctx.registry.setups] };
    },
  );
};
