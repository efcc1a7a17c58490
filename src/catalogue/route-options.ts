/** What every catalogue route plugin shares: the service, the token check, and how parameters are checked. */
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { requireToken } from '../auth/index.ts';
import { handlerChecks, refuseInvalid } from './request-schemas.ts';
import { bodyErrors } from './schema-errors.ts';
import type { CatalogueService } from './service.ts';

export interface CatalogueRouteOptions {
  service: CatalogueService;
  /** Authenticates the bearer token. */
  auth: ReturnType<typeof requireToken>;
}

/** Routes whose path parameter the handler checks itself, in its own words (request-schemas.ts). */
export function pathRoute(auth: CatalogueRouteOptions['auth']) {
  return { attachValidation: true, preHandler: [handlerChecks('params'), auth] };
}

/**
 * Routes with a path parameter and a JSON body: the body is checked by its schema with TypeBox's compiler
 * (no coercion: "5" is not a number), its refusals worded by schema-errors.ts; `hint` says what a body
 * must look like. A bad body is answered after authentication, as the handler's own check was.
 */
export function bodyRoute(auth: CatalogueRouteOptions['auth'], body: TSchema, hint: string) {
  return {
    attachValidation: true,
    preHandler: [handlerChecks('params', 'body'), auth, refuseInvalid('body')],
    validatorCompiler: TypeBoxValidatorCompiler,
    schemaErrorFormatter: bodyErrors(body, hint),
  };
}

/** Routes whose path parameter and metadata conditions the handler checks itself. */
export function conditionRoute(auth: CatalogueRouteOptions['auth']) {
  return { attachValidation: true, preHandler: [handlerChecks('params', 'querystring'), auth] };
}

/** The query as sent: conditions repeat keys and carry operators, which only parseConditions reads. */
export function rawQuery(request: FastifyRequest): string {
  const q = request.url.indexOf('?');
  return q === -1 ? '' : request.url.slice(q + 1);
}
