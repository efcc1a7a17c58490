/**
 * A pilot's identity over HTTP (docs/pilots.md "API"): `POST /pilots` registers a hand-started agent,
 * `POST /pilots/{pid}/token` answers a pilot token, `POST /pilots/{pid}/end` is the agent's final report.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { requireToken } from '../../auth/index.ts';
import type { AppContext } from '../../kernel/context.ts';
import { AuthenticationRequired } from '../../kernel/errors.ts';
import { errors, SECURITY } from '../../kernel/openapi.ts';
import { pilotBearer, requirePilot } from '../routes/guards.ts';
import type { PilotCredential, PilotSessions } from './sessions.ts';
import { EndAnswer, EndBody, PilotParams, PilotTokenAnswer, RegisterBody, TokenBody } from './token-schemas.ts';
import { verifyPilotToken } from './tokens.ts';

const tags = ['Pilots'];

export const pilotTokenRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; sessions: PilotSessions }> = async (app, { ctx, sessions }) => {
  const auth = requireToken(ctx);

  /** The pilot a pilot token in the Authorization header speaks for. @throws AuthenticationRequired without one, InvalidToken for a bad one */
  const pilotOf = async (request: FastifyRequest) => {
    const token = pilotBearer(request);
    if (token === undefined) throw new AuthenticationRequired('a pilot token is required (Authorization: Bearer dirigo-pilot.…)');
    return verifyPilotToken(ctx.db, token);
  };

  app.post(
    '/pilots',
    {
      preHandler: [auth, async (request) => requirePilot(request.principal!)],
      schema: {
        tags,
        security: SECURITY.token,
        operationId: 'registerPilot',
        summary: 'Register a hand-started agent as a manual pilot (a Pilot group\'s access token); answers its first pilot token',
        body: RegisterBody,
        response: { 201: PilotTokenAnswer, ...errors(400, 401, 403, 413, 415) },
      },
    },
    async (request, reply) => {
      const answer = await sessions.register(request.principal!, request.body);
      reply.code(201).header('cache-control', 'no-store');
      return answer;
    },
  );

  app.post(
    '/pilots/:pid/token',
    {
      // The body may be left out when the bearer is the credential.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags,
        // No bearer with a factory pilot's secret in the body.
        security: [{}, ...SECURITY.token],
        operationId: 'pilotToken',
        summary: "A pilot token: for a factory pilot's secret, the pilot's own pilot token, or its owner's Pilot access token",
        params: PilotParams,
        body: TokenBody,
        response: { 200: PilotTokenAnswer, ...errors(400, 401, 403, 404, 413, 415) },
      },
    },
    async (request, reply) => {
      let credential: PilotCredential;
      const token = pilotBearer(request);
      if (request.body.secret !== undefined) credential = { secret: request.body.secret };
      else if (token !== undefined) credential = { pilotToken: await verifyPilotToken(ctx.db, token) };
      else {
        if (request.headers.authorization === undefined && !request.url.includes('access_token')) {
          throw new AuthenticationRequired("a pilot token is exchanged for the pilot's secret (body), its pilot token or its owner's access token (bearer)");
        }
        await auth(request, reply);
        requirePilot(request.principal!);
        credential = { principal: request.principal! };
      }
      const answer = await sessions.exchange(request.params.pid, credential);
      reply.header('cache-control', 'no-store');
      return answer;
    },
  );

  app.post(
    '/pilots/:pid/end',
    {
      schema: {
        tags,
        security: SECURITY.token,
        operationId: 'endPilot',
        summary: "The pilot's final report (its pilot token): Done, or Failed with the reason",
        params: PilotParams,
        body: EndBody,
        response: { 200: EndAnswer, ...errors(400, 401, 409, 413, 415) },
      },
    },
    async (request) => sessions.end(request.params.pid, await pilotOf(request), request.body.state, request.body.reason),
  );
};
