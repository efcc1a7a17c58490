/**
 * Before any schema or handler: no route ever sees text a database cannot store (storable-text.ts), nor
 * an integer parameter the validator would have coerced from loose text (canonical-integers.ts).
 */
import type { preValidationHookHandler } from 'fastify';
import { refuseUnstorableText } from '../kernel/storable-text.ts';
import { refuseLooseIntegers } from '../kernel/canonical-integers.ts';

/** A callback, not an async function: every request runs it (a throw reaches the error handler either way). */
export const refuseUnsafeInput: preValidationHookHandler = (request, _reply, done) => {
  refuseUnstorableText(request.params, 'params');
  refuseUnstorableText(request.query, 'query');
  refuseUnstorableText(request.body, 'body');
  refuseLooseIntegers(request);
  done();
};
