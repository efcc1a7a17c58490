/**
 * The response validator every test service runs (test/helpers/response-validator.ts) catches an answer
 * the document does not describe: an undocumented status, a body that does not match its schema, a media
 * type the operation does not answer with; documented answers pass.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { Type } from 'typebox';
import { responseValidator } from '../helpers/response-validator.ts';
import { Binary } from '../../src/kernel/openapi.ts';

describe('the response validator of the test services', () => {
  it('reports undocumented statuses, bodies and media types, and passes what the document says', async () => {
    const { plugin, violations } = responseValidator();
    const app = Fastify();
    await app.register(plugin);
    const response = { 200: Type.Object({ name: Type.String() }), 404: Type.Object({ error: Type.String() }) };
    app.get('/good', { schema: { response } }, async () => ({ name: 'x' }));
    app.get('/bad-body', { schema: { response } }, async (_q, reply) => reply.code(404).send({ error: 3 }));
    app.get('/bad-status', { schema: { response } }, async (_q, reply) => reply.code(409 as 404).send({ error: 'conflict' }));
    app.get('/bad-type', { schema: { response: { 404: response[404] }, documented: { responses: { 200: { description: 'an archive', content: { 'application/gzip': Binary } } } } } }, async (_q, reply) =>
      reply.type('text/plain').send('hello'),
    );
    app.get('/archive', { schema: { documented: { responses: { 200: { description: 'an archive', content: { 'application/gzip': Binary } } } } } }, async (_q, reply) =>
      reply.type('application/gzip').send(Buffer.from([0x1f, 0x8b])),
    );
    app.get('/hidden', { schema: { hide: true } }, async () => 'anything');
    for (const url of ['/good', '/bad-body', '/bad-status', '/bad-type', '/archive', '/hidden', '/missing']) await app.inject({ url });
    await app.close();
    assert.equal(violations.length, 3, violations.join('\n'));
    assert.match(violations[0]!, /^GET \/bad-body .*status 404 body .*error must be string/);
    assert.match(violations[1]!, /^GET \/bad-status .*status 409 is not documented/);
    assert.match(violations[2]!, /^GET \/bad-type .*answers text\/plain, documented: application\/gzip/);
  });
});
