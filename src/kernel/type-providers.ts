/**
 * Type providers beside @fastify/type-provider-typebox's. Routes whose answer is written by hand (text
 * already serialized, a stream, an archive, a `documented` body the framework never serializes) type
 * their request by its schemas as every route does, and leave the answer's type open: the response
 * schemas of such routes describe only their errors, which the error handler writes.
 */
import type { FastifyTypeProvider } from 'fastify';
import type { Static, TSchema } from 'typebox';

export interface HandWrittenAnswerTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
  serializer: unknown;
}
